const assert = require('assert')
const add = (a, b) => a + b
describe('add', () => {
  it('adds', () => { assert.strictEqual(add(1, 2), 3) })
  describe('nested', () => {
    it('fails on purpose', () => { assert.strictEqual(add(1, 2), 4) })
    it.skip('skipped one', () => {})
  })
})
it('top level', () => {})
describe('hooks', () => {
  before(() => { throw new Error('hook boom') })
  it('never runs because of the hook', () => {})
})
