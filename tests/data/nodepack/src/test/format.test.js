'use strict';

const { formatRange } = require('../src/format');

test('format range', () => {
  expect(formatRange(0, 10)).toMatchSnapshot();
});
