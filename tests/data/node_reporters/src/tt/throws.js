const t = require('tap')
t.test('before', t => { t.ok(true); t.end() })
t.test('throws', t => { throw new Error('boom') })
