const t = require('tap')
const x = require('./does-not-exist')
t.test('never runs', t => { t.equal(x, 1); t.end() })
