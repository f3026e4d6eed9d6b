const test = require('node:test');
const assert = require('node:assert');
const { countWords } = require('../words.js');

test('counts words', () => {
  assert.strictEqual(countWords('a b  c'), 3);
});
