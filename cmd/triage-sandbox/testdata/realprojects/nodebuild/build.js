// The build: tsc when the package has typescript (node_modules, as the
// test provides it), else the same output written by hand, so the build
// writes dist/ into the checkout either way.
const fs = require('fs');
const { execFileSync } = require('child_process');
if (fs.existsSync('node_modules/typescript/bin/tsc')) {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', '.'], { stdio: 'inherit' });
  console.log('built with tsc');
} else {
  fs.mkdirSync('dist', { recursive: true });
  fs.writeFileSync('dist/index.js', '"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\nexports.add = add;\nfunction add(a, b) {\n    return a + b;\n}\n');
  fs.writeFileSync('dist/index.d.ts', 'export declare function add(a: number, b: number): number;\n');
  console.log('built without tsc');
}
