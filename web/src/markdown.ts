/** Markdown → safe HTML (markdown-it with raw HTML off) with highlight.js code blocks. */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import plaintext from "highlight.js/lib/languages/plaintext";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

for (const [name, lang] of Object.entries({
  bash, css, diff, go, javascript, json, plaintext, python, rust, shell, sql, typescript, xml, yaml,
})) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml", "toml"], { languageName: "yaml" });
hljs.registerAliases(["txt", "text"], { languageName: "plaintext" });

const md: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code: string, lang: string): string {
    if (lang && hljs.getLanguage(lang)) {
      try {
        return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
      } catch {
        /* fall through to escaped text */
      }
    }
    return "";
  },
});

// Only explicit links (http://…, www.…): "CHANGELOG.md" is a file name, not a Moldovan domain.
md.linkify.set({ fuzzyLink: false });

// Links open in a new tab and never get the opener.
const defaultLink = md.renderer.rules.link_open ?? ((tokens, i, opts, _env, self) => self.renderToken(tokens, i, opts));
md.renderer.rules.link_open = (tokens, i, opts, env, self) => {
  tokens[i].attrSet("target", "_blank");
  tokens[i].attrSet("rel", "noopener noreferrer");
  return defaultLink(tokens, i, opts, env, self);
};

export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** Highlighted HTML for a whole file by its name, or null when the language is unknown. */
export function highlightFile(path: string, text: string): string | null {
  const ext = path.split(".").pop()?.toLowerCase() ?? "";
  const lang = ext === "md" ? null : hljs.getLanguage(ext) ? ext : null;
  if (!lang || text.length > 400_000) return null;
  try {
    return hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
  } catch {
    return null;
  }
}

export { hljs };
