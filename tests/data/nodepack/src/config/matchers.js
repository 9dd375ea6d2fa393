'use strict';

// Custom matchers for the tests are registered here; the tests need none yet.
