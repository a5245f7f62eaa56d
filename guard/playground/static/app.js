// couchguard playground. The page decides nothing itself: every action, rule and rate comes from the server, which
// runs Guard's own policy code on scores computed once per conversation. Text from conversations is only ever set
// with textContent, never parsed as HTML.
"use strict";

const state = {
  policy: null,          // name of the chosen policy
  signals: [],           // [{name, side, kind, description, threshold}] of the policy as shipped
  overrides: {},         // signal -> threshold moved in the page
  catalogue: null,       // bundled vignettes
  lastDecision: null,
  seq: 0,                // newest request wins: answers to older ones are dropped
  moorePoll: null,
};

const $ = (id) => document.getElementById(id);
const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// -- talking to the server ---------------------------------------------------------------------------------------
async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
  };
  let response;
  try {
    response = await fetch(path, options);
  } catch (err) {
    throw new Error(`the playground server cannot be reached (${err.message})`);
  }
  let data;
  try {
    data = await response.json();
  } catch (err) {
    throw new Error(`${path}: the server answered ${response.status} without JSON`);
  }
  if (!response.ok) throw new Error(data.error || `${path}: HTTP ${response.status}`);
  return data;
}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

// -- conversation editor -----------------------------------------------------------------------------------------
const ROLES = ["user", "assistant", "system"];

function addTurn(role = "user", content = "") {
  const list = $("turns");
  const index = list.children.length + 1;
  const roleId = `turn-role-${crypto.randomUUID()}`;
  const textId = `turn-text-${crypto.randomUUID()}`;
  const turn = el("div", {class: "turn", "data-role": role});
  const roleSelect = el("select", {id: roleId},
    ROLES.map((r) => el("option", {value: r, text: r, selected: r === role})));
  roleSelect.addEventListener("change", () => { turn.dataset.role = roleSelect.value; });
  const text = el("textarea", {id: textId, rows: 3});
  text.value = content;
  const remove = el("button", {type: "button", class: "link", text: "Remove"});
  remove.addEventListener("click", () => {
    const next = turn.nextElementSibling || turn.previousElementSibling;
    turn.remove();
    renumber();
    (next ? next.querySelector("textarea") : $("add-turn")).focus();
  });
  turn.append(
    el("div", {class: "turn-head"},
      el("label", {for: roleId, class: "turn-label", text: `Turn ${index} role`}), roleSelect,
      el("span", {class: "spacer"}), remove),
    el("label", {for: textId, class: "visually-hidden turn-text-label", text: `Turn ${index} text`}),
    text);
  list.append(turn);
  renumber();
  return text;
}

function renumber() {
  [...$("turns").children].forEach((turn, i) => {
    turn.querySelector(".turn-label").textContent = `Turn ${i + 1} role`;
    turn.querySelector(".turn-text-label").textContent = `Turn ${i + 1} text`;
    turn.querySelector("button").setAttribute("aria-label", `Remove turn ${i + 1}`);
  });
}

function setMessages(messages) {
  $("turns").replaceChildren();
  for (const m of messages) addTurn(ROLES.includes(m.role) ? m.role : "user", String(m.content ?? ""));
}

function messages() {
  return [...$("turns").children].map((turn) => ({
    role: turn.querySelector("select").value,
    content: turn.querySelector("textarea").value,
  }));
}

function useJson() {
  let parsed;
  try {
    parsed = JSON.parse($("json-input").value);
  } catch (err) {
    showError(`The pasted text is not valid JSON: ${err.message}`);
    return;
  }
  const list = Array.isArray(parsed) ? parsed : parsed && parsed.messages;
  if (!Array.isArray(list)) {
    showError('Paste a list of messages, or an object with a "messages" list.');
    return;
  }
  // the server validates roles and contents and says what is wrong; here only the shape is taken
  $("turns").replaceChildren();
  for (const m of list) {
    const turn = addTurn("user", "");
    const box = turn.closest(".turn");
    const role = m && typeof m === "object" ? m.role : undefined;
    const select = box.querySelector("select");
    if (!ROLES.includes(role)) select.append(el("option", {value: String(role), text: String(role)}));
    select.value = String(role);
    box.dataset.role = String(role);
    turn.value = m && typeof m === "object" && typeof m.content === "string" ? m.content : JSON.stringify(m?.content ?? "");
  }
  check();
}

// -- vignettes ---------------------------------------------------------------------------------------------------
function fillVignettes(catalogue) {
  const select = $("vignette");
  select.replaceChildren(
    el("optgroup", {label: "Moore et al. 2025: stimuli and labelled real responses"},
      catalogue.moore.map((s) => el("option", {value: `moore:${s.id}`,
        text: `${s.condition} (${s.id}): ${clip(s.label, 70)}`}))),
    el("optgroup", {label: "psychosis-bench: escalating user turns"},
      catalogue.psychosis.map((c) => el("option", {value: `psychosis:${c.id}`, text: `${c.name} (${c.theme})`}))));
  fillVariants();
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

function chosenVignette() {
  const [kind, id] = $("vignette").value.split(":");
  const list = kind === "moore" ? state.catalogue.moore : state.catalogue.psychosis;
  return {kind, item: list.find((x) => x.id === id)};
}

function fillVariants() {
  const {kind, item} = chosenVignette();
  const variant = $("variant");
  if (kind === "moore") {
    $("variant-label").textContent = "Labelled response";
    variant.replaceChildren(
      el("option", {value: "", text: "none: the stimulus only (input rail)"}),
      ...item.responses.map((r) => el("option", {value: String(r.row),
        text: `${r.appropriate ? "appropriate" : "inappropriate"}, ${r.source} (row ${r.row}): ${r.preview}`})));
    $("vignette-note").textContent = `${item.responses.length} labelled responses to this stimulus.`;
  } else {
    $("variant-label").textContent = "Turns";
    variant.replaceChildren(...item.prompts.map((_, i) => el("option", {value: String(i + 1),
      text: `first ${i + 1} of ${item.prompts.length} user turns`, selected: i === item.prompts.length - 1})));
    $("vignette-note").textContent = `${item.condition}; harm: ${item.harm_type}.`;
  }
}

async function loadVignette() {
  const {kind, item} = chosenVignette();
  const value = $("variant").value;
  try {
    if (kind === "moore" && value !== "") {
      const response = await api(`api/vignettes/moore/${value}`);
      setMessages(response.messages);
      $("vignette-note").textContent =
        `${response.source}, labelled ${response.appropriate ? "appropriate" : "inappropriate"} by Moore et al.`;
    } else if (kind === "moore") {
      setMessages(item.messages);
    } else {
      setMessages(item.prompts.slice(0, Number(value)).map((content) => ({role: "user", content})));
    }
  } catch (err) {
    showError(err.message);
    return;
  }
  await check();
}

// -- deciding ----------------------------------------------------------------------------------------------------
async function check() {
  const seq = ++state.seq;
  const body = {policy: state.policy, messages: messages(), thresholds: state.overrides};
  $("decision").setAttribute("aria-busy", "true");
  try {
    const decision = await api("api/decide", body);
    if (seq !== state.seq) return;
    clearError();
    state.lastDecision = decision;
    renderDecision(decision);
    $("decision").dataset.hash = decision.conversation_hash;
    renderSignals(decision.signals);
  } catch (err) {
    if (seq === state.seq) showError(err.message);
  } finally {
    $("decision").removeAttribute("aria-busy");
  }
}

function renderDecision(d) {
  $("decision").replaceChildren(
    el("div", {class: "verdict"},
      el("span", {class: `action ${d.action}`, id: "action", "data-action": d.action, text: d.action}),
      el("span", {text: `${d.rail} rail`}),
      d.escalate ? el("span", {class: "escalate", text: "escalates for human follow-up"}) : null),
    el("p", {id: "delivery", text: d.delivery}));
  const received = $("received");
  if (d.text === null) {
    received.replaceChildren(el("p", {class: "muted",
      text: "Nothing yet: the model is called, and its response then goes through the output rail."}));
  } else {
    received.textContent = d.text;
  }
  $("instructions").replaceChildren(...d.instructions.map((text) =>
    el("details", {}, el("summary", {text: "Safety instruction added before the model is called"}),
      el("p", {class: "received", text}))));
  $("rules").replaceChildren(...(d.rules.length ? d.rules.map((r) =>
    el("li", {class: r.action},
      el("div", {}, el("strong", {text: r.id}), ` (${r.rail} rail): ${r.action}${r.escalate ? " + escalate" : ""}`),
      el("div", {class: "small muted", text: `when ${r.when}`}),
      el("div", {class: "criterion"}, el("strong", {text: r.criterion_title}), `: ${r.criterion_summary}`)))
    : [el("li", {class: "muted", text: "No rule fired."})]));
}

// -- signals and sliders -----------------------------------------------------------------------------------------
function renderSignals(rows) {
  const container = $("signals");
  const sides = {user: "User turns", assistant: "Model response"};
  const existing = new Map([...container.querySelectorAll(".signal")].map((n) => [n.dataset.signal, n]));
  if (existing.size !== rows.length || rows.some((r) => !existing.has(r.name))) {
    container.replaceChildren(...Object.entries(sides).map(([side, title]) =>
      el("div", {class: "side", "data-side": side}, el("h3", {text: title}),
        el("p", {class: "note side-note", id: `side-note-${side}`}),
        rows.filter((r) => r.side === side).map(signalRow))));
  }
  for (const row of rows) updateSignal(row);
  for (const side of Object.keys(sides)) {
    const unscored = rows.some((r) => r.side === side && r.score === null) && state.lastDecision;
    $(`side-note-${side}`).textContent = unscored
      ? "Not scored: these signals read a model response, and the conversation has none yet." : "";
  }
}

function signalRow(row) {
  const id = `threshold-${row.name.replace(/\W/g, "-")}`;
  const slider = el("input", {type: "range", id, min: 0, max: 100, step: 1, "data-signal": row.name,
    "aria-describedby": `${id}-note`});
  slider.addEventListener("input", () => {
    state.overrides[row.name] = Number(slider.value) / 100;
    updateThreshold(row.name);
    scheduleRedecide();
  });
  const reset = el("button", {type: "button", class: "link reset", text: "reset",
    "aria-label": `reset ${row.name} to the policy's threshold`});
  reset.addEventListener("click", () => {
    delete state.overrides[row.name];
    updateThreshold(row.name);
    slider.focus();
    scheduleRedecide();
  });
  return el("div", {class: `signal ${row.kind}`, "data-signal": row.name, title: row.description},
    el("div", {class: "signal-head"},
      el("label", {for: id, text: row.name}),
      el("span", {class: "kind", text: row.kind}),
      el("span", {class: "spacer"}),
      el("span", {class: "nums"},
        "score ", el("strong", {class: "score"}), " · threshold ", el("strong", {class: "threshold"})),
      reset),
    el("div", {class: "bar", "aria-hidden": "true"},
      el("div", {class: "fill"}), el("div", {class: "mark"}), el("div", {class: "mark tight", hidden: true})),
    slider,
    el("div", {class: "note", id: `${id}-note`}));
}

function signalSpec(name) {
  return state.signals.find((s) => s.name === name);
}

function threshold(name) {
  return name in state.overrides ? state.overrides[name] : signalSpec(name).threshold;
}

function updateThreshold(name) {
  const node = document.querySelector(`.signal[data-signal="${name}"]`);
  if (!node) return;
  const value = threshold(name);
  const base = signalSpec(name).threshold;
  const slider = node.querySelector("input[type=range]");
  const moved = name in state.overrides;
  if (!moved) slider.value = String(Math.round(base * 100));
  slider.setAttribute("aria-valuetext", `${fmt(value, 2)}${moved ? ` (policy ${fmt(base)})` : ""}`);
  node.querySelector(".threshold").textContent = moved ? fmt(value, 2) : fmt(base);
  node.querySelector(".mark").style.left = `${100 * value}%`;
  node.querySelector(".reset").hidden = !moved;
  node.classList.toggle("moved", moved);
}

function updateSignal(row) {
  const node = document.querySelector(`.signal[data-signal="${row.name}"]`);
  const scored = row.score !== null;
  node.classList.toggle("flagged", row.flagged);
  node.dataset.score = scored ? String(row.score) : "";
  node.querySelector(".score").textContent = scored ? fmt(row.score) : state.lastDecision ? "not scored" : "–";
  node.querySelector(".bar").classList.toggle("unscored", !scored);
  node.querySelector(".fill").style.width = `${scored ? 100 * row.score : 0}%`;
  const tight = node.querySelector(".mark.tight");
  tight.hidden = row.tightened_to === null || row.tightened_to >= row.threshold;
  if (!tight.hidden) tight.style.left = `${100 * row.tightened_to}%`;
  const notes = [];
  if (row.flagged) notes.push("at or above its threshold");
  if (!tight.hidden) notes.push(`lowered to ${fmt(row.tightened_to, 2)} for this conversation by an input rule`);
  node.querySelector(".note").textContent = notes.join("; ");
  updateThreshold(row.name);
}

let redecideTimer = null;
function scheduleRedecide() {
  clearTimeout(redecideTimer);
  redecideTimer = setTimeout(() => {
    if (messages().some((m) => m.content.trim())) check();
    refreshMoore();
    refreshExport();
  }, 120);
}

// -- Moore set ---------------------------------------------------------------------------------------------------
let mooreSeq = 0;
async function refreshMoore() {
  const seq = ++mooreSeq;
  clearTimeout(state.moorePoll);
  try {
    const result = await api("api/moore", {policy: state.policy, thresholds: state.overrides});
    if (seq !== mooreSeq) return;
    renderMoore(result);
    if (result.status.state === "computing") state.moorePoll = setTimeout(refreshMoore, 1000);
  } catch (err) {
    if (seq === mooreSeq) showError(err.message);
  }
}

function renderMoore({status, stats}) {
  const box = $("moore");
  // the panel is redrawn on every slider move: what the reader opened stays open
  const opened = new Set([...box.querySelectorAll("details[open]")].map((d) => d.id));
  renderMooreStats(box, status, stats);
  for (const id of opened) if ($(id)) $(id).open = true;
}

function renderMooreStats(box, status, stats) {
  if (status.state === "failed") {
    box.replaceChildren(el("p", {class: "error", text: `The Moore scores could not be computed: ${status.error}`}));
    return;
  }
  if (!stats) {
    box.replaceChildren(
      el("p", {text: `Scoring ${status.total} labelled responses once (kept on disk afterwards): ${status.done} done.`}),
      el("progress", {max: status.total, value: status.done, "aria-label": "Moore scoring progress"}));
    return;
  }
  const now = stats.current.overall, base = stats.base.overall;
  const line = (label, key, k, n, higherIsBetter) => {
    const delta = now[key] - base[key];
    const better = higherIsBetter ? delta > 0 : delta < 0;
    return el("tr", {},
      el("th", {scope: "row", text: label}),
      el("td", {"data-stat": key, text: `${pct(now[key])} (${now[k]}/${now[n]})`}),
      el("td", {text: pct(base[key])}),
      el("td", {class: `delta ${Math.abs(delta) < 1e-9 ? "" : better ? "better" : "worse"}`,
        text: Math.abs(delta) < 1e-9 ? "±0" : `${delta > 0 ? "+" : ""}${(100 * delta).toFixed(1)} pts`}));
  };
  const conditions = Object.keys(stats.current.by_condition);
  box.replaceChildren(...[
    el("p", {class: "small muted", text: `${stats.n} responses${status.sampled ? " (an evenly spaced sample)" : ""}, ` +
      `labelled appropriate or not by Moore et al. Caught = an inappropriate response the user does not receive; ` +
      `false block = an appropriate one withheld.`}),
    el("table", {class: "stats", id: "moore-table"},
      el("thead", {}, el("tr", {}, el("th", {text: ""}), el("th", {text: "these thresholds"}),
        el("th", {text: "policy as shipped"}), el("th", {text: "change"}))),
      el("tbody", {}, line("catch rate", "catch_rate", "caught", "inappropriate", true),
        line("false-block rate", "false_block_rate", "false_blocks", "appropriate", false))),
    el("p", {class: "small", text: `${stats.changed} of ${stats.n} responses change fate (delivered or withheld).`}),
    stats.changed_rows.length ? el("details", {id: "moore-changed"},
      el("summary", {text: `Responses that change fate${stats.changed > stats.changed_rows.length
        ? ` (first ${stats.changed_rows.length})` : ""}`}),
      el("ul", {class: "changed"}, stats.changed_rows.map(changedRow))) : null,
    el("details", {id: "moore-by-condition"}, el("summary", {text: "By condition"}),
      el("table", {class: "stats"},
        el("thead", {}, el("tr", {}, ["condition", "catch", "false blocks"].map((t) => el("th", {text: t})))),
        el("tbody", {}, conditions.map((c) => {
          const t = stats.current.by_condition[c];
          return el("tr", {}, el("td", {text: c}), el("td", {text: pct(t.catch_rate)}),
            el("td", {text: pct(t.false_block_rate)}));
        })))),
  ].filter(Boolean));
}

function changedRow(r) {
  const fate = (action) => (action === "rewrite" || action === "block" ? "withheld" : "delivered");
  const good = r.appropriate ? fate(r.now) === "delivered" : fate(r.now) === "withheld";
  return el("li", {class: good ? "better" : "worse"},
    el("button", {type: "button", class: "link", text: `row ${r.row}`,
      "aria-label": `load Moore response row ${r.row}`, onclick: () => loadMooreRow(r.row)}),
    ` ${r.source}, ${r.condition} (${r.stimulus_id}), labelled ${r.appropriate ? "appropriate" : "inappropriate"}: ` +
    `${fate(r.before)} → ${fate(r.now)}`);
}

async function loadMooreRow(row) {
  try {
    const response = await api(`api/vignettes/moore/${row}`);
    setMessages(response.messages);
    $("vignette-note").textContent = `Moore row ${row}: ${response.source}, labelled ` +
      `${response.appropriate ? "appropriate" : "inappropriate"} by Moore et al.`;
  } catch (err) {
    showError(err.message);
    return;
  }
  await check();
  $("turns").querySelector("textarea")?.focus();
}

// -- export ------------------------------------------------------------------------------------------------------
let exportSeq = 0;
async function refreshExport() {
  const seq = ++exportSeq;
  const name = $("override-name").value.trim();
  try {
    const result = await api("api/export", {policy: state.policy, thresholds: state.overrides,
      name: name || null});
    if (seq !== exportSeq) return;
    $("override-yaml").value = result.yaml;
    $("override-yaml").dataset.filename = result.filename;
    const moved = Object.keys(result.thresholds).length;
    $("export-note").textContent = moved ? `${moved} threshold${moved > 1 ? "s" : ""} changed from ${state.policy}.`
      : `No threshold moved: this override behaves like ${state.policy}.`;
  } catch (err) {
    if (seq === exportSeq) showError(err.message);
  }
}

function download() {
  const blob = new Blob([$("override-yaml").value], {type: "application/yaml"});
  const link = el("a", {href: URL.createObjectURL(blob), download: $("override-yaml").dataset.filename || "override.yaml"});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

async function copyYaml() {
  try {
    await navigator.clipboard.writeText($("override-yaml").value);
    $("export-note").textContent = "Copied.";
  } catch (err) {
    $("override-yaml").select();
    $("export-note").textContent = "Selected: press Ctrl+C to copy.";
  }
}

// -- policy ------------------------------------------------------------------------------------------------------
async function choosePolicy(name) {
  try {
    const policy = await api(`api/policy?name=${encodeURIComponent(name)}`);
    state.policy = name;
    state.signals = policy.signals;
    state.overrides = {};
    $("policy-description").textContent = policy.description.split("\n")[0];
    $("signals").replaceChildren();
    renderSignals(policy.signals.map((s) => ({...s, score: null, flagged: false, tightened_to: null})));
    clearError();
  } catch (err) {
    showError(err.message);
    $("policy").value = state.policy ?? "";
    return;
  }
  if (messages().some((m) => m.content.trim())) await check();
  refreshMoore();
  refreshExport();
}

async function start() {
  $("add-turn").addEventListener("click", () => addTurn(
    messages().at(-1)?.role === "user" ? "assistant" : "user").focus());
  $("check").addEventListener("click", check);
  $("use-json").addEventListener("click", useJson);
  $("vignette").addEventListener("change", fillVariants);
  $("load-vignette").addEventListener("click", loadVignette);
  $("policy").addEventListener("change", () => choosePolicy($("policy").value));
  $("download").addEventListener("click", download);
  $("copy").addEventListener("click", copyYaml);
  let nameTimer = null;
  $("override-name").addEventListener("input", () => {
    clearTimeout(nameTimer);
    nameTimer = setTimeout(refreshExport, 300);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      check();
    }
  });
  addTurn("user", "");
  let policies;
  try {
    policies = await api("api/policies");
    $("policy").replaceChildren(...policies.names.map((n) => el("option", {value: n, text: n})));
    $("policy").value = policies.default;
    state.catalogue = await api("api/vignettes");
    fillVignettes(state.catalogue);
  } catch (err) {
    showError(err.message);
    return;
  }
  await choosePolicy(policies.default);
  document.body.dataset.ready = "true";
}

start();
