const x = require('./does-not-exist');
test('never runs', () => { expect(x).toBe(1); });
