'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { parse } = require('..');

test('parses pairs', () => {
  assert.deepStrictEqual(parse('a=1,b=x'), { a: 1, b: 'x' });
});

test('a runner cache in the checkout', () => {
  // Test runners write into the tree (node_modules/.cache, .pytest_cache).
  fs.mkdirSync('node_modules/.cache/nodecov', { recursive: true });
  fs.writeFileSync('node_modules/.cache/nodecov/ran', 'yes');
});
