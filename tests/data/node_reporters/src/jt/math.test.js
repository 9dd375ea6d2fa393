const add = (a, b) => a + b;
describe('add', () => {
  test('adds two numbers', () => { expect(add(1, 2)).toBe(3); });
  describe('nested', () => {
    test('fails on purpose', () => { expect(add(1, 2)).toBe(4); });
    test.skip('skipped one', () => { expect(1).toBe(1); });
    test.todo('a todo');
  });
});
test('top level test', () => { expect(true).toBe(true); });
