'use strict';

const { add, clamp } = require('../src/calc');

test('add', () => {
  expect(add(2, 3)).toBe(5);
});

test('clamp inside', () => {
  expect(clamp(5, 0, 10)).toBe(5);
});

test('clamp high edge', () => {
  expect(clamp(11, 0, 10)).toBe(10);
});

test('clamp low edge', () => {
  expect(clamp(-1, 0, 10)).toBe(0);
});
