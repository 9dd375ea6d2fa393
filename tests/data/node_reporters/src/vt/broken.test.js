import x from './does-not-exist'
import { test, expect } from 'vitest'
test('never runs', () => { expect(x).toBe(1) })
