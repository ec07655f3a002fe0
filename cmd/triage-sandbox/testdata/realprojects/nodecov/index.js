'use strict';
// parse turns "a=1,b=2" into { a: 1, b: 2 }.
function parse(text) {
  const out = {};
  for (const part of text.split(',')) {
    if (!part) continue;
    const [k, v] = part.split('=');
    out[k] = Number.isNaN(Number(v)) ? v : Number(v);
  }
  return out;
}
module.exports = { parse };
