require('./does-not-exist')
it('never runs', () => {})
