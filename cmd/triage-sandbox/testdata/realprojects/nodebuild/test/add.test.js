const test = require('node:test');
const assert = require('node:assert');
const { add } = require('../dist/index.js');

test('add', () => {
  assert.strictEqual(add(2, 3), 5);
});
