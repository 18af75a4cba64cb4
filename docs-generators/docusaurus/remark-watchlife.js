// remark-watchlife: in a Docusaurus site (MDX), a ```watchlife fenced block
// becomes a <watchlife-player> element. The block is read by the player's own
// parser (player.js, required from the site's copy): one option per line,
// "name: value" or a bare "name"; a first bare word that is no option names
// the scenario; any other line fails the build, naming the page and line.
// Licensed under Apache-2.0.
//
// docusaurus.config.js:
//   scripts: [{ src: "/watchlife/player.js", async: true }],  // static/watchlife/ is `make embed`'s folder
//   presets: [["classic", { docs: { remarkPlugins: [require("./remark-watchlife")] } }]],
//
// The plugin finds player.js at static/watchlife/player.js under the folder
// the build runs in; `[require("./remark-watchlife"), { player: "PATH" }]`
// names another place.

const path = require("path");

const DEFAULT_PLAYER = path.join("static", "watchlife", "player.js");

// The block's options as MDX attributes; a wrong one is an error naming `where`.
function attributesOf(parse, text, where) {
  let pairs;
  try {
    pairs = parse(text);
  } catch (error) {
    throw new Error(`${where}: ${error.message}`);
  }
  // A bare option is an empty string: React then writes it as a present attribute.
  return pairs.map(([name, value]) => ({ type: "mdxJsxAttribute", name, value }));
}

function visit(parse, node, file) {
  for (const [index, child] of (node.children || []).entries()) {
    if (child.type === "code" && child.lang === "watchlife") {
      const line = child.position ? child.position.start.line : "?";
      node.children[index] = {
        type: "mdxJsxFlowElement",
        name: "watchlife-player",
        attributes: attributesOf(parse, child.value, `${file.path || "a page"}:${line}`),
        children: [],
      };
    } else {
      visit(parse, child, file);
    }
  }
}

module.exports = function remarkWatchlife(options = {}) {
  const player = path.resolve(options.player || DEFAULT_PLAYER);
  const { attributesOf: parse } = require(player);
  return (tree, file) => visit(parse, tree, file);
};
