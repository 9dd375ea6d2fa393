'use strict';

function formatRange(low, high) {
  return `[${low}, ${high}]`;
}

module.exports = { formatRange };
