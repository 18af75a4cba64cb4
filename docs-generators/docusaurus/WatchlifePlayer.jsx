// <WatchlifePlayer scenario="pod-lifecycle" autoplay loop /> in an MDX page
// of a Docusaurus site, for authors who prefer a component to a fenced
// block: loads static/watchlife/player.js once, then renders the element.
// Copy it to src/components/. Licensed under Apache-2.0.
import React, { useEffect } from "react";
import useBaseUrl from "@docusaurus/useBaseUrl";

export default function WatchlifePlayer(props) {
  const script = useBaseUrl("/watchlife/player.js");
  useEffect(() => {
    if (customElements.get("watchlife-player") || document.querySelector(`script[src="${script}"]`)) return;
    const tag = document.createElement("script");
    tag.src = script;
    document.head.append(tag);
  }, [script]);
  // true: a present attribute; false or nothing: left out.
  const attributes = {};
  for (const [name, value] of Object.entries(props)) {
    if (value === true) attributes[name] = "";
    else if (value !== false && value != null) attributes[name] = String(value);
  }
  return React.createElement("watchlife-player", attributes);
}
