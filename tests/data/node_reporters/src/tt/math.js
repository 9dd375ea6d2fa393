const t = require('tap')
const add = (a, b) => a + b
t.test('add', t => {
  t.equal(add(1, 2), 3, 'one plus two')
  t.equal(add(2, 2), 4, 'two plus two')
  t.test('nested group', t => {
    t.equal(add(0, 0), 0, 'zero')
    t.equal(add(1, 1), 3, 'wrong on purpose')
    t.end()
  })
  t.end()
})
t.test('skipped group', { skip: true }, t => { t.end() })
t.test('todo group', { todo: true }, t => { t.end() })
t.equal(1, 1, 'top-level assertion')
t.test('passes', async t => { t.ok(true) })
