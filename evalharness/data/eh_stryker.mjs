// Mutants of JavaScript/TypeScript files by Stryker's own instrumenter (evalharness packs inject, docs/injection.md).
// Usage: node eh_stryker.mjs INSTRUMENTER_INDEX_JS < {"files": {path: text}} > {"mutants": [...], "errors": {...}}
// Each mutant: file, mutator (Stryker's name), start/end (UTF-16 offsets into the file's text), original, replacement.
// Only the mutants are read; the instrumented code Stryker also prints is thrown away.
const [index] = process.argv.slice(2);
const { Instrumenter } = await import(index);

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { files } = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const quiet = () => {};
const logger = { isTraceEnabled: () => false, isDebugEnabled: () => false, isInfoEnabled: () => false,
  isWarnEnabled: () => false, isErrorEnabled: () => false, isFatalEnabled: () => false,
  trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet, fatal: quiet };
const options = { plugins: null, excludedMutations: [], ignorers: [] };

function offset(lineStarts, position) {  // Stryker's API positions: line 0-based, column 0-based
  return lineStarts[position.line] + position.column;
}

const mutants = [];
const errors = {};
for (const [name, text] of Object.entries(files)) {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  let result;
  try {
    result = await new Instrumenter(logger).instrument([{ name, content: text, mutate: true }], options);
  } catch (e) {
    errors[name] = String(e && e.message ? e.message : e).split('\n')[0].slice(0, 300);
    continue;
  }
  for (const m of result.mutants) {
    if (m.status === 'Ignored') continue;
    const start = offset(lineStarts, m.location.start);
    const end = offset(lineStarts, m.location.end);
    mutants.push({ file: name, mutator: m.mutatorName, start, end, line: m.location.start.line + 1,
      original: text.slice(start, end), replacement: m.replacement });
  }
}
process.stdout.write(JSON.stringify({ mutants, errors }));
