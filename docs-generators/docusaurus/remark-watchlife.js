// remark-watchlife: in a Docusaurus site (MDX), a ```watchlife fenced block
// becomes a <watchlife-player> element. One option per line, "name: value"
// or a bare "name"; a first bare word that is no option names the scenario;
// any other line fails the build, naming it. Licensed under Apache-2.0.
//
// docusaurus.config.js:
//   scripts: [{ src: "/watchlife/player.js", async: true }],  // static/watchlife/ is `make embed`'s folder
//   presets: [["classic", { docs: { remarkPlugins: [require("./remark-watchlife")] } }]],

const OPTIONS = ["scenario", "src", "demo", "autoplay", "loop", "speed", "animation", "start-at", "poster",
  "controls", "theme", "captions", "markers", "markers-src", "pause-at-markers", "title"];

function attributesOf(text, where) {
  const attributes = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const colon = line.indexOf(":");
    const name = (colon < 0 ? line : line.slice(0, colon)).trim();
    // A bare option is an empty string: React then writes it as a present attribute.
    const value = colon < 0 ? "" : line.slice(colon + 1).trim();
    if (OPTIONS.includes(name)) attributes.push({ type: "mdxJsxAttribute", name, value });
    else if (!attributes.length && colon < 0 && !/\s/.test(name)) {
      attributes.push({ type: "mdxJsxAttribute", name: "scenario", value: name });
    } else {
      throw new Error(`${where}: unknown watchlife option "${name}"; the options are: ${OPTIONS.join(", ")}`);
    }
  }
  return attributes;
}

function visit(node, file) {
  for (const [index, child] of (node.children || []).entries()) {
    if (child.type === "code" && child.lang === "watchlife") {
      const line = child.position ? child.position.start.line : "?";
      node.children[index] = {
        type: "mdxJsxFlowElement",
        name: "watchlife-player",
        attributes: attributesOf(child.value, `${file.path || "a page"}:${line}`),
        children: [],
      };
    } else {
      visit(child, file);
    }
  }
}

module.exports = function remarkWatchlife() {
  return (tree, file) => visit(tree, file);
};
