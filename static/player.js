// <watchlife-player>: watchlife's replay (or its in-page demo) as one element
// of a docs page, loaded by this one script. Licensed under Apache-2.0.
//
//   <script src="watchlife/player.js"></script>
//   <watchlife-player scenario="pod-lifecycle" autoplay loop></watchlife-player>
//
// or, as one line, the script itself places the player where it stands:
//
//   <script src="watchlife/player.js" data-scenario="pod-lifecycle" data-autoplay></script>
//
// Attributes (named as asciinema-player's options where they mean the same):
//   scenario     a recording shipped beside this script (scenarios/NAME.jsonl)
//   src          any recording's URL (JSON Lines, gzipped or not)
//   demo         run the demo control plane in the page instead (demo.html)
//   autoplay     play once loaded (else paused at the start)
//   loop         start over at the end
//   speed        a multiple of the recorded pace: 0.25, 0.5, 1, 2 or 4
//   animation    how long a token takes through the stages: slow-motion,
//                slower, normal (the default), fast or live (as measured)
//   start-at     where to start: seconds, or "m:ss"
//   poster       an image shown until the player is loaded
//   controls     full | minimal (the default) | none (driven by script only)
//   theme        light | dark | auto (the reader's system, the default)
//   captions     on | off
//   markers      the author's markers, "T:LABEL;T:LABEL", T in seconds
//   markers-src  a file of markers, one "T:LABEL" a line (`watchlife record
//                --marker` writes one beside its recording)
//   pause-at-markers  a guided tour: the player stops at each marker
//
// Script API: play(), pause(), seek(t) (seconds, "NN%", or {marker: i |
// "next" | "prev"}), and currentTime, duration, paused, ended, markers.
// Events: ready, play, pause, ended, marker (detail: {index, time, label}),
// timeupdate.
//
// A fenced ```watchlife block that a Markdown renderer left as it is (MkDocs'
// superfences, any renderer's `language-watchlife` code) becomes a player too.
// Required in Node, the script gives its block parser alone ({OPTIONS,
// attributesOf}): the Docusaurus plugin reads blocks with it at build time.
//
// Each player is a frame of this folder's embed.html that sizes itself to
// its content; it is made only when scrolled near, and players on one page
// share the app the browser downloaded once. Children of the element (a
// poster image linking to the replay, say) are shown where scripts do not run.
(() => {
  "use strict";
  const OPTIONS = ["scenario", "src", "demo", "autoplay", "loop", "speed", "animation", "start-at", "poster",
    "controls", "theme", "captions", "markers", "markers-src", "pause-at-markers", "title"];

  // A block's text as a player's attributes: one option per line, "name:
  // value" or a bare "name"; a first bare word that is no option names the
  // scenario. Throws on a line that is no option, naming it.
  const attributesOf = (text) => {
    const attributes = [];
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (!line || line.startsWith("#")) continue;
      const colon = line.indexOf(":");
      const name = (colon < 0 ? line : line.slice(0, colon)).trim();
      const value = colon < 0 ? "" : line.slice(colon + 1).trim();
      if (OPTIONS.includes(name)) attributes.push([name, value]);
      else if (!attributes.length && colon < 0 && !/\s/.test(name)) attributes.push(["scenario", name]);
      else throw new Error(`unknown watchlife option "${name}"; the options are: ${OPTIONS.join(", ")}`);
    }
    return attributes;
  };

  // Required by Node (a docs generator's plugin, at build time): the block
  // parser alone, so that a wrong option fails the site's build.
  if (typeof module === "object" && module.exports) {
    module.exports = { OPTIONS, attributesOf };
    return;
  }

  if (customElements.get("watchlife-player")) return;

  const script = document.currentScript;
  const here = new URL(".", script ? script.src : document.baseURI);

  // Ahead of the viewport by this much, a player starts loading, so that it
  // is ready when it scrolls in.
  const LOAD_AHEAD = "300px";
  // The frame's height before the page inside reports its own.
  const FIRST_HEIGHT = 480;

  // Players load one after another: the first downloads the app, and the
  // next starts once it is running, so that the browser's cache gives it the
  // same files (two frames fetching at once would download them twice). A
  // player that is not running after TURN_MS lets the next one go anyway.
  let turn = Promise.resolve();
  const TURN_MS = 15000;

  // The page's animation speeds, slowest first (its `speed=` index).
  const ANIMATION = ["slow-motion", "slower", "normal", "fast", "live"];

  // "m:ss", "h:mm:ss" or seconds, as seconds; NaN when it reads as neither.
  const seconds = (text) => String(text).trim().split(":")
    .reduce((total, part) => total * 60 + Number(part), 0);

  const STYLE = `
    :host { display: block; position: relative; min-height: 8rem; }
    iframe { display: block; width: 100%; border: 0; height: ${FIRST_HEIGHT}px; }
    .poster { display: block; width: 100%; height: auto; }
    .waiting { display: grid; place-items: center; min-height: 8rem; font: 1rem system-ui, sans-serif;
      color: #555; border: 1px dashed #999; border-radius: .4rem; }
    [hidden] { display: none !important; }`;

  class WatchlifePlayer extends HTMLElement {
    static get observedAttributes() { return OPTIONS; }

    constructor() {
      super();
      this._state = { status: "off", currentTime: 0, duration: 0, paused: true, ended: false,
        markers: [], reached: null };
      this._pending = [];
      this._frame = null;
      const root = this.attachShadow({ mode: "open" });
      root.innerHTML = `<style>${STYLE}</style><img class="poster" alt="" hidden>` +
        `<div class="waiting" part="waiting">watchlife</div>`;
      this._poster = root.querySelector(".poster");
      this._waiting = root.querySelector(".waiting");
      this._onMessage = (event) => this._receive(event);
    }

    connectedCallback() {
      window.addEventListener("message", this._onMessage);
      this._showPoster();
      if (!("IntersectionObserver" in window)) return this._load();
      this._observer = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) this._load();
      }, { rootMargin: LOAD_AHEAD });
      this._observer.observe(this);
    }

    disconnectedCallback() {
      window.removeEventListener("message", this._onMessage);
      if (this._observer) this._observer.disconnect();
    }

    attributeChangedCallback(name, before, after) {
      if (before === after) return;
      if (name === "poster") this._showPoster();
      // A loaded player changed its options: it starts again with the new ones.
      if (this._frame) this._frame.src = this._address();
    }

    // The script API.
    play() { this._send({ watchlife: "play" }); }
    pause() { this._send({ watchlife: "pause" }); }
    seek(where) {
      const time = this._timeOf(where);
      if (Number.isFinite(time)) this._send({ watchlife: "seek", time });
    }
    get currentTime() { return this._state.currentTime; }
    get duration() { return this._state.duration; }
    get paused() { return this._state.paused; }
    get ended() { return this._state.ended; }
    get markers() { return this._state.markers.map((m, index) => ({ index, ...m })); }

    // Seconds into the recording of `where`: seconds, "NN%", {marker: …}.
    _timeOf(where) {
      const { markers, duration, currentTime } = this._state;
      if (typeof where === "number") return where;
      if (typeof where === "string" && where.trim().endsWith("%")) {
        return duration * parseFloat(where) / 100;
      }
      if (typeof where === "string") return seconds(where);
      if (where && "marker" in where) {
        let index = where.marker;
        if (index === "next") index = markers.findIndex((m) => m.time > currentTime + 1e-3);
        if (index === "prev") index = markers.findLastIndex((m) => m.time < currentTime - 1e-3);
        return markers[index] ? markers[index].time : NaN;
      }
      return NaN;
    }

    _send(command) {
      if (!this._frame) this._load();
      if (this._state.status === "ready") {
        this._frame.contentWindow.postMessage(command, "*");
      } else {
        this._pending.push(command);
      }
    }

    _showPoster() {
      const poster = this.getAttribute("poster");
      this._poster.hidden = !poster || this._state.status === "ready";
      this._waiting.hidden = !this._poster.hidden || !!this._frame;
      if (poster) this._poster.src = new URL(poster, document.baseURI).href;
    }

    // Takes this player's turn to load (see `turn`), then frames its page.
    _load() {
      if (this._queued) return;
      this._queued = true;
      if (this._observer) this._observer.disconnect();
      turn = turn.then(() => new Promise((done) => {
        this._loaded = done;
        setTimeout(done, TURN_MS);
        this._framePage();
      }));
    }

    _framePage() {
      const frame = document.createElement("iframe");
      frame.title = this.getAttribute("title") ||
        `watchlife: ${this.getAttribute("scenario") || (this.hasAttribute("demo") ? "the demo" : "a replay")}`;
      frame.loading = "eager";
      frame.src = this._address();
      this._frame = frame;
      this.shadowRoot.append(frame);
      this._showPoster();
    }

    // The page this player frames, with its options in the address.
    _address() {
      const q = new URLSearchParams();
      const attr = (name) => this.getAttribute(name);
      const theme = attr("theme");
      if (theme === "light" || theme === "dark") q.set("theme", theme);
      if (attr("captions")) q.set("captions", attr("captions") === "off" ? "off" : "on");
      q.set("controls", ["full", "none"].includes(attr("controls")) ? attr("controls") : "minimal");
      const animation = ANIMATION.indexOf(attr("animation"));
      if (animation >= 0) q.set("speed", String(animation));
      if (this.hasAttribute("demo")) return new URL(`demo.html?${q}`, here).href;
      if (attr("src")) q.set("replay", new URL(attr("src"), document.baseURI).href);
      else q.set("scenario", attr("scenario") || "pod-lifecycle");
      if (!this.hasAttribute("autoplay")) q.set("paused", "1");
      if (this.hasAttribute("loop")) q.set("loop", "1");
      if (attr("speed")) q.set("rate", attr("speed"));
      const start = seconds(attr("start-at") || "0");
      if (start > 0) q.set("start", String(start));
      if (attr("markers")) q.set("markers", attr("markers"));
      if (attr("markers-src")) q.set("markers_src", new URL(attr("markers-src"), document.baseURI).href);
      if (this.hasAttribute("pause-at-markers")) q.set("pause_at_markers", "1");
      return new URL(`embed.html?${q}`, here).href;
    }

    // A state message from the page in this player's frame.
    _receive(event) {
      if (!this._frame || event.source !== this._frame.contentWindow) return;
      const next = event.data;
      // The in-page demo tells its height alone; its first message says it runs.
      if (next && next.watchlife === "size" && next.height > 0) {
        this._frame.style.height = `${next.height}px`;
        if (this._state.status !== "ready") {
          this._loaded();
          this._state = { ...this._state, status: "ready" };
          this._showPoster();
          this.dispatchEvent(new CustomEvent("ready"));
        }
        return;
      }
      if (!next || next.watchlife !== "state") return;
      // Changes are told from the first ready state on: before it, the
      // player is as if paused at the start.
      const last = this._state.status === "ready" ? this._state
        : { ...this._state, paused: true, ended: false, reached: null };
      this._state = next;
      if (next.height > 0) this._frame.style.height = `${next.height}px`;
      const fire = (name, detail) => this.dispatchEvent(new CustomEvent(name, { detail }));
      if (next.status === "ready" && last.status !== "ready") {
        this._loaded();
        this._showPoster();
        fire("ready");
        for (const command of this._pending.splice(0)) this._frame.contentWindow.postMessage(command, "*");
      }
      // A recording that cannot be played lets the next player load at once.
      if (next.status === "failed" && last.status !== "failed") this._loaded();
      if (next.status !== "ready") return;
      if (next.currentTime !== last.currentTime) fire("timeupdate");
      // A marker reached comes before the pause it causes.
      const reached = next.reached;
      if (reached && (!last.reached || reached.count !== last.reached.count)) {
        fire("marker", { index: reached.index, ...next.markers[reached.index] });
      }
      if (next.paused !== last.paused) fire(next.paused ? "pause" : "play");
      if (next.ended && !last.ended) fire("ended");
    }
  }

  customElements.define("watchlife-player", WatchlifePlayer);

  // Fenced ```watchlife blocks as Markdown renderers leave them (a div or
  // pre of class "watchlife", as MkDocs' superfences writes; a code of class
  // "language-watchlife", as most others do) become players, the way
  // Mermaid's script turns its blocks into diagrams.
  const upgradeBlocks = () => {
    const blocks = document.querySelectorAll("div.watchlife, pre.watchlife, code.language-watchlife");
    for (const block of blocks) {
      const target = block.matches("code") && block.parentElement.matches("pre") ? block.parentElement : block;
      try {
        const player = document.createElement("watchlife-player");
        for (const [name, value] of attributesOf(block.textContent)) player.setAttribute(name, value);
        target.replaceWith(player);
      } catch (error) {
        const message = document.createElement("p");
        message.className = "watchlife-error";
        message.textContent = `watchlife: ${error.message}`;
        target.before(message);
      }
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", upgradeBlocks);
  else upgradeBlocks();

  // The one-line embed: a script tag with data-scenario or data-src places
  // a player, with the script's data-* options, right after itself.
  if (script && (script.dataset.scenario || script.dataset.src || "demo" in script.dataset)) {
    const player = document.createElement("watchlife-player");
    for (const name of OPTIONS) {
      const value = script.getAttribute(`data-${name}`);
      if (value !== null) player.setAttribute(name, value);
    }
    script.after(player);
  }
})();
