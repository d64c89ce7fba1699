// Loads config.json, vocab.txt and the int8 model; classifies the typed sentence with
// onnxruntime-web's WebAssembly backend (one thread: no cross-origin isolation needed).
'use strict';

(async function main() {
  const status = document.getElementById('status');
  const button = document.getElementById('classify');
  const input = document.getElementById('text');
  try {
    ort.env.wasm.wasmPaths = new URL('vendor/', document.baseURI).href;
    ort.env.wasm.numThreads = 1;
    const config = await (await fetch('model/config.json')).json();
    const vocab = await (await fetch('model/vocab.txt')).text();
    const tokenizer = new WordPieceTokenizer(vocab, { doLowerCase: config.do_lower_case, maxLength: config.max_length });
    // ?model=float loads the float model the int8 one was quantized from (to compare runtimes).
    const file = new URLSearchParams(location.search).get('model') === 'float' ? config.float_model : config.model;
    const session = await ort.InferenceSession.create('model/' + file, { executionProviders: ['wasm'] });

    async function classify() {
      const ids = tokenizer.encode(input.value);
      const n = ids.length;
      const tensor = (values) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [1, n]);
      const feeds = {
        input_ids: tensor(ids),
        attention_mask: tensor(ids.map(() => 1)),
        token_type_ids: tensor(ids.map(() => 0)),
      };
      const outputs = await session.run(feeds);
      const logits = Array.from(outputs[config.output].data, Number);
      const top = Math.max(...logits);
      const exps = logits.map((x) => Math.exp(x - top));
      const sum = exps.reduce((a, b) => a + b, 0);
      const probabilities = exps.map((e) => e / sum);
      const best = probabilities.indexOf(Math.max(...probabilities));
      document.getElementById('label').textContent = config.labels[best];
      document.getElementById('probabilities').innerHTML = config.labels.map((label, i) =>
        `<tr><td>${label}</td><td class="p">${probabilities[i].toFixed(6)}</td>` +
        `<td><span class="bar" style="width:${Math.round(300 * probabilities[i])}px"></span></td></tr>`).join('');
      const result = { text: input.value, input_ids: ids, logits, probabilities, label: config.labels[best] };
      const pre = document.getElementById('result');
      pre.textContent = JSON.stringify(result);
      pre.setAttribute('data-done', String(Number(pre.getAttribute('data-done') || 0) + 1));
      status.textContent = `${n} tokens`;
    }

    button.addEventListener('click', () => classify().catch((e) => { status.textContent = 'error: ' + e; }));
    input.addEventListener('keydown', (event) => { if (event.key === 'Enter') button.click(); });
    button.disabled = false;
    status.textContent = `ready: ${file} (test accuracy: float ${config.float_accuracy.toFixed(4)}, ` +
      `int8 ${config.int8_accuracy.toFixed(4)})`;
    status.setAttribute('data-model', file);
    status.setAttribute('data-ready', 'yes');
  } catch (error) {
    status.textContent = 'error: ' + error;
    status.setAttribute('data-ready', 'error');
  }
})();
