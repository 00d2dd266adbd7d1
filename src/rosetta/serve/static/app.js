// Rosetta's page: translate, list the alternatives, draw cross-attention.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const CELL = 26; // pixels per heatmap cell
const LEGEND_WIDTH = 14; // pixels

let results = []; // one entry per input line: {source, hypotheses}
let selected = { line: 0, hypothesis: 0 };
let engine = "rosetta"; // the server's; CTranslate2 has only the refilling beam
let oneShot = false; // a non-autoregressive model: no beam, fertilities instead
let completing = 0; // the latest completion request; earlier answers are dropped
const COMPLETION_DELAY_MS = 250; // typing pauses this long before asking

async function loadInfo() {
  try {
    const response = await fetch("/info");
    const info = await response.json();
    const size = info.parameters >= 1e6
      ? `${(info.parameters / 1e6).toFixed(1)}M`
      : `${(info.parameters / 1e3).toFixed(1)}k`;
    engine = info.engine;
    $("model-info").textContent =
      `${info.model}: ${info.src_label} → ${info.tgt_label}, ` +
      `${info.arch}, ${size} parameters, ${info.precision} on ${info.device}` +
      (engine === "rosetta" ? "" : `, ${engine} engine`);
    $("beam").max = info.limits.max_beam;
    $("nbest").max = info.limits.max_beam;
    oneShot = info.one_pass;
    if (oneShot) {
      // one pass decodes every token: there is no beam to size, no prefix
      for (const id of ["beam", "nbest"]) {
        $(id).value = 1;
        $(id).closest("label").style.display = "none";
      }
      $("prefix-box").hidden = true;
    }
    showLanguages(info.languages);
    // the search controls are Rosetta's own: a NAT model and CTranslate2 refuse them
    $("controls").hidden = oneShot || engine !== "rosetta";
  } catch (error) {
    $("model-info").textContent = "model information unavailable";
  }
}

// A multilingual model's languages, offered as two lists (the source's only
// where the model is told it), the server's defaults chosen.
function showLanguages(languages) {
  if (!languages || !languages.target.length) return;
  const fill = (select, codes, chosen) => {
    // no default: the reader chooses (a request without one is refused)
    if (!chosen) select.add(new Option("choose…", "", false, true));
    for (const code of codes) select.add(new Option(code, code, false, code === chosen));
  };
  fill($("target-lang"), languages.target, languages.target_default);
  if (languages.source.length) {
    fill($("source-lang"), languages.source, languages.source_default);
  } else {
    $("source-lang-label").hidden = true;
  }
  $("languages").hidden = false;
}

// The languages chosen, named as the request's fields (none for other models).
function languageChoice() {
  if ($("languages").hidden) return {};
  const choice = {};
  if ($("target-lang").value) choice.target_lang = $("target-lang").value;
  if (!$("source-lang-label").hidden && $("source-lang").value) {
    choice.source_lang = $("source-lang").value;
  }
  return choice;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function describeError(status, body) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((d) => `${d.loc.slice(1).join(".")}: ${d.msg}`).join("; ");
  }
  return `the server answered ${status}`;
}

function sourceLines() {
  const sentences = $("source").value.split("\n");
  while (sentences.length > 1 && sentences[sentences.length - 1].trim() === "") {
    sentences.pop();
  }
  return sentences;
}

// POST /translate: the response, and its JSON body (null if it has none).
async function postTranslate(request) {
  const response = await fetch("/translate", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...request, ...languageChoice() }),
  });
  return { response, body: await response.json().catch(() => null) };
}

// The controls filled in (none when hidden), named as rosetta translate's flags.
function searchControls() {
  if ($("controls").hidden) return {};
  const controls = {};
  const ban = $("ban").value.split(",").map((phrase) => phrase.trim()).filter(Boolean);
  if (ban.length) {
    controls.ban = ban;
    controls.ban_forms = $("ban-forms").checked;
  }
  const minLen = Number($("min-len").value);
  const noRepeat = Number($("no-repeat").value);
  if (minLen > 0) controls.min_len = minLen;
  if (noRepeat > 0) controls.no_repeat_ngram = noRepeat;
  return controls;
}

// The first line's constraint: the prefix typed, if any; none for the others.
function prefixConstraints(count) {
  const prefix = $("prefix").value;
  if (!prefix.trim()) return null;
  return Array.from({ length: count }, (_, line) => (line === 0 ? { prefix } : null));
}

async function translate(event) {
  event.preventDefault();
  const sentences = sourceLines();
  const constraints = prefixConstraints(sentences.length);
  // CTranslate2 takes a prefix in greedy search only
  const beam = engine === "ctranslate2" && constraints ? 1 : Number($("beam").value);
  const request = {
    sentences,
    beam_size: beam,
    nbest: Math.min(Number($("nbest").value), beam),
    alpha: Number($("alpha").value),
    attention: true,
  };
  if (constraints) request.constraints = constraints;
  Object.assign(request, searchControls());
  if (engine === "ctranslate2" && beam > 1) {
    Object.assign(request, { refill: true, stopping: "k_finished" });
  }
  showError("");
  $("submit").disabled = true;
  $("submit").textContent = "Translating…";
  try {
    const { response, body } = await postTranslate(request);
    if (!response.ok) {
      showError(describeError(response.status, body));
      return;
    }
    results = body.translations;
    selected = { line: 0, hypothesis: 0 };
    render();
  } catch (error) {
    showError(`could not reach the server: ${error}`);
  } finally {
    $("submit").disabled = false;
    $("submit").textContent = "Translate";
  }
}

// Alternatives that start with the prefix, best first, as the user types.
async function complete() {
  const ticket = ++completing;
  const source = sourceLines()[0];
  const prefix = $("prefix").value;
  const list = $("completions");
  if (!source.trim() || !prefix.trim()) {
    list.replaceChildren();
    return;
  }
  const beam = engine === "ctranslate2" ? 1 : Math.max(Number($("nbest").value), 2);
  const request = {
    sentences: [source],
    beam_size: beam,
    nbest: beam,
    alpha: Number($("alpha").value),
    constraints: [{ prefix }],
    ...searchControls(),
  };
  try {
    const { response, body } = await postTranslate(request);
    if (ticket !== completing) return; // the user typed on
    if (!response.ok) {
      showError(describeError(response.status, body));
      list.replaceChildren();
      return;
    }
    showError("");
    list.replaceChildren(
      ...body.translations[0].hypotheses.map((hypothesis) => {
        const item = document.createElement("li");
        item.textContent = hypothesis.text;
        item.title = `log P ${hypothesis.score.toFixed(3)}: click to take it`;
        item.addEventListener("click", () => {
          $("prefix").value = hypothesis.text;
          complete();
        });
        return item;
      }),
    );
  } catch (error) {
    if (ticket === completing) showError(`could not reach the server: ${error}`);
  }
}

let completionTimer = null;
function completeSoon() {
  clearTimeout(completionTimer);
  completionTimer = setTimeout(complete, COMPLETION_DELAY_MS);
}

function render() {
  const translation = $("translation");
  translation.replaceChildren();
  results.forEach((result, line) => {
    const div = document.createElement("div");
    div.className = "line" + (line === selected.line ? " selected" : "");
    div.textContent = result.hypotheses.length ? result.hypotheses[0].text : "";
    div.addEventListener("click", () => {
      selected = { line, hypothesis: 0 };
      render();
    });
    translation.appendChild(div);
  });
  const list = $("nbest-list");
  list.replaceChildren();
  const current = results[selected.line];
  current.hypotheses.forEach((hypothesis, rank) => {
    const item = document.createElement("li");
    item.className = rank === selected.hypothesis ? "selected" : "";
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = hypothesis.text;
    const score = document.createElement("span");
    score.className = "score";
    const normalized = hypothesis.normalized_score;
    score.textContent =
      `log P ${hypothesis.score.toFixed(3)}` +
      (normalized === null ? "" : ` · normalised ${normalized.toFixed(3)}`) +
      (hypothesis.complete === false ? " · incomplete: the controls left no token" : "");
    item.append(text, score);
    item.addEventListener("click", () => {
      selected.hypothesis = rank;
      render();
    });
    list.appendChild(item);
  });
  $("results").hidden = false;
  const hypothesis = current.hypotheses[selected.hypothesis];
  showFertilities(hypothesis);
  if (hypothesis && hypothesis.attention) {
    fillSelectors(hypothesis.attention);
    drawHeatmap();
    $("attention").hidden = false;
  } else {
    $("attention").hidden = true;
  }
}

function fillSelectors(attention) {
  // attention: [target token][layer][head][source token]
  const layers = attention.length ? attention[0].length : 0;
  const heads = layers ? attention[0][0].length : 0;
  // By default the last layer and the mean of its heads; a choice is kept.
  fill($("layer"), layers, "layer", String(layers - 1));
  fill($("head"), heads, "head", heads > 1 ? "mean" : "0");
}

function fill(select, count, label, fallback) {
  const previous = select.value;
  select.replaceChildren();
  if (count > 1) select.appendChild(new Option(`mean of ${count}`, "mean"));
  for (let i = 0; i < count; i++) {
    select.appendChild(new Option(`${label} ${i + 1}`, String(i)));
  }
  const values = [...select.options].map((option) => option.value);
  select.value = values.includes(previous) ? previous : fallback;
}

function weightsFor(attention, layerChoice, headChoice) {
  // One row of weights over the source per generated token.
  return attention.map((perLayer) => {
    const layers = layerChoice === "mean" ? perLayer : [perLayer[Number(layerChoice)]];
    const sourceLength = layers[0][0].length;
    const row = new Array(sourceLength).fill(0);
    let count = 0;
    for (const perHead of layers) {
      const heads = headChoice === "mean" ? perHead : [perHead[Number(headChoice)]];
      for (const weights of heads) {
        weights.forEach((w, s) => (row[s] += w));
        count += 1;
      }
    }
    return row.map((w) => w / count);
  });
}

function showFertilities(hypothesis) {
  // a non-autoregressive model's plan: how many target tokens each source token gave
  const box = $("fertilities");
  box.replaceChildren();
  if (!hypothesis || !hypothesis.fertilities) {
    $("fertility-section").hidden = true;
    return;
  }
  hypothesis.source_tokens.forEach((token, s) => {
    const cell = document.createElement("span");
    cell.className = "fertility";
    const word = document.createElement("span");
    word.className = "token";
    word.textContent = token;
    const count = document.createElement("span");
    count.className = "count";
    count.textContent = hypothesis.fertilities[s];
    cell.append(word, count);
    box.appendChild(cell);
  });
  $("fertility-section").hidden = false;
}

function drawHeatmap() {
  const hypothesis = results[selected.line].hypotheses[selected.hypothesis];
  const attention = hypothesis.attention;
  const rows = weightsFor(attention, $("layer").value, $("head").value);
  const sourceTokens = hypothesis.source_tokens;
  const targetTokens = hypothesis.tokens.slice();
  // the row of the end token, named as the source's last column is
  while (targetTokens.length < rows.length) targetTokens.push("<eos>");
  // Colours are scaled to this matrix's largest weight: averaged over heads,
  // real attention is spread thin, and a fixed 0-1 scale left it all pale.
  const largest = Math.max(...rows.flat(), 1e-6);
  const longest = (tokens) => Math.max(...tokens.map((t) => t.length), 4);
  const left = 20 + 8.5 * longest(targetTokens);
  const top = 16 + 7.5 * longest(sourceTokens);
  const legendX = left + CELL * sourceTokens.length + 16;
  const width = legendX + LEGEND_WIDTH + 48;
  const height = top + CELL * rows.length + 10;

  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "cross-attention heatmap");
  sourceTokens.forEach((token, s) => {
    const label = document.createElementNS(SVG, "text");
    const x = left + CELL * s + CELL / 2;
    label.setAttribute("transform", `translate(${x},${top - 6}) rotate(-60)`);
    label.setAttribute("class", "source-token");
    label.textContent = token;
    svg.appendChild(label);
  });
  rows.forEach((row, t) => {
    const label = document.createElementNS(SVG, "text");
    label.setAttribute("x", left - 6);
    label.setAttribute("y", top + CELL * t + CELL * 0.65);
    label.setAttribute("text-anchor", "end");
    label.setAttribute("class", "target-token");
    label.textContent = targetTokens[t];
    svg.appendChild(label);
    row.forEach((weight, s) => {
      const cell = document.createElementNS(SVG, "rect");
      cell.setAttribute("class", "cell");
      cell.setAttribute("x", left + CELL * s);
      cell.setAttribute("y", top + CELL * t);
      cell.setAttribute("width", CELL - 1);
      cell.setAttribute("height", CELL - 1);
      cell.setAttribute("fill", shade(weight / largest));
      cell.dataset.weight = weight.toFixed(4);
      cell.dataset.target = t;
      cell.dataset.source = s;
      const title = document.createElementNS(SVG, "title");
      title.textContent = `${targetTokens[t]} → ${sourceTokens[s]}: ${weight.toFixed(3)}`;
      cell.appendChild(title);
      cell.addEventListener("mouseenter", () => {
        $("cell-info").textContent = title.textContent;
      });
      svg.appendChild(cell);
    });
  });
  drawLegend(svg, legendX, top, CELL * rows.length, largest);
  $("heatmap").replaceChildren(svg);
}

function drawLegend(svg, x, top, height, largest) {
  // A vertical colour bar from 0 (bottom) to the largest weight (top).
  const steps = 32;
  for (let i = 0; i < steps; i++) {
    const band = document.createElementNS(SVG, "rect");
    band.setAttribute("class", "legend");
    band.setAttribute("x", x);
    band.setAttribute("y", top + (height * i) / steps);
    band.setAttribute("width", LEGEND_WIDTH);
    band.setAttribute("height", height / steps + 0.5);
    band.setAttribute("fill", shade(1 - i / steps));
    svg.appendChild(band);
  }
  const labels = [[largest.toFixed(2), top + 10], ["0", top + height]];
  for (const [text, y] of labels) {
    const label = document.createElementNS(SVG, "text");
    label.setAttribute("x", x + LEGEND_WIDTH + 4);
    label.setAttribute("y", y);
    label.setAttribute("class", "legend-label");
    label.textContent = text;
    svg.appendChild(label);
  }
}

// Viridis-like stops, dark to light is 1 to 0 reversed: light yellow (0)
// through green and blue to dark purple (1), readable in print and by most
// colour-blind readers.
const STOPS = [
  [253, 231, 37],
  [94, 201, 98],
  [33, 145, 140],
  [59, 82, 139],
  [68, 1, 84],
];

function shade(fraction) {
  const w = Math.max(0, Math.min(1, fraction)) * (STOPS.length - 1);
  const i = Math.min(Math.floor(w), STOPS.length - 2);
  const t = w - i;
  const [r, g, b] = STOPS[i].map((c, k) => Math.round(c + t * (STOPS[i + 1][k] - c)));
  return `rgb(${r},${g},${b})`;
}

$("translate-form").addEventListener("submit", translate);
$("layer").addEventListener("change", drawHeatmap);
$("head").addEventListener("change", drawHeatmap);
loadInfo();
$("prefix").addEventListener("input", completeSoon);
$("source").addEventListener("input", completeSoon);
