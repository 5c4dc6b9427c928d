/**
 * The manual holds together: the README stays short, links every page under docs/, and every
 * relative link (file and #anchor) in README.md, CHANGELOG.md and docs/*.md points at something
 * that exists. Anchors are checked against the target's headings, slugged as GitHub does.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const ROOT = resolve(".");
const README_MAX_BYTES = 12 * 1024;

/** A link found in a markdown file: its target as written and the line it is on. */
interface Link {
  target: string;
  line: number;
}

/** A markdown file's lines outside fenced code blocks: as written, and with inline code removed. */
function proseLines(markdown: string): { raw: string; text: string; line: number }[] {
  const lines: { raw: string; text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((raw, index) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(raw)?.[1];
    if (marker) {
      if (fence === undefined) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    lines.push({ raw, text: raw.replace(/(`+)[^`]*?\1/g, ""), line: index + 1 });
  });
  return lines;
}

/** Inline links and images `[text](target "title")` and reference definitions `[x]: target`. */
function linksOf(markdown: string): Link[] {
  const links: Link[] = [];
  for (const { text, line } of proseLines(markdown)) {
    for (const match of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (match[1]) links.push({ target: match[1], line });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(text);
    if (definition?.[1]) links.push({ target: definition[1], line });
  }
  return links;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped (but - and _), spaces to -. */
function slugOf(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a markdown file offers: one per ATX heading, repeats numbered -1, -2, … */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { raw } of proseLines(markdown)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw)?.[1];
    if (!heading) continue;
    const base = slugOf(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/**
 * Tables without a header row: a run of `|` lines whose second line is not the `|---|` separator
 * renders as plain text. Each problem names the table's first line.
 */
function headerlessTables(file: string, markdown: string): string[] {
  const problems: string[] = [];
  const lines = proseLines(markdown);
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i];
    const previous = lines[i - 1];
    if (!first?.raw.trimStart().startsWith("|")) continue;
    if (previous?.raw.trimStart().startsWith("|") && previous.line === first.line - 1) continue;
    const second = lines[i + 1];
    const separated =
      second !== undefined &&
      second.line === first.line + 1 &&
      /^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$/.test(second.raw);
    if (!separated) problems.push(`${file}:${first.line}: a table without a header row`);
  }
  return problems;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/**
 * What is wrong with the relative links of `file` (a path under `root`, its text `markdown`):
 * targets that do not exist or lie outside the repository (a clone has nothing beside it), and
 * anchors that no heading of the target has. `read` gives a file's text (for the anchors of other files).
 */
function brokenLinks(
  root: string,
  file: string,
  markdown: string,
  read: (path: string) => string | undefined,
): string[] {
  const problems: string[] = [];
  for (const { target, line } of linksOf(markdown)) {
    const where = `${file}:${line}: ${target}`;
    if (isExternal(target)) continue;
    const hash = target.indexOf("#");
    const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved = pathPart === "" ? join(root, file) : resolve(root, dirname(file), pathPart);
    const inRepo = relative(root, resolved);
    if (inRepo.startsWith(`..${sep}`) || inRepo === "..") {
      problems.push(`${where}: outside the repository`);
      continue;
    }
    const text = read(inRepo);
    if (text === undefined && !existsSync(resolved)) {
      problems.push(`${where}: no such file`);
      continue;
    }
    if (anchor === undefined) continue;
    if (text === undefined || !inRepo.endsWith(".md")) {
      problems.push(`${where}: an anchor into a file that is not markdown`);
      continue;
    }
    if (!anchorsOf(text).has(anchor)) problems.push(`${where}: no heading #${anchor}`);
  }
  return problems;
}

/** A repository file's text, or undefined for a missing file or a directory. */
function readRepoFile(path: string): string | undefined {
  const full = join(ROOT, path);
  if (!existsSync(full) || !statSync(full).isFile()) return undefined;
  return readFileSync(full, "utf8");
}

const docPages = readdirSync(join(ROOT, "docs"))
  .filter((name) => name.endsWith(".md"))
  .sort()
  .map((name) => `docs/${name}`);
const manualFiles = ["README.md", "CHANGELOG.md", ...docPages];

describe("the manual", () => {
  it("keeps the README at most 12 KB, with the test command", () => {
    const readme = readFileSync(join(ROOT, "README.md"));
    expect(readme.byteLength).toBeLessThanOrEqual(README_MAX_BYTES);
    expect(readme.toString("utf8")).toContain("npm test");
  });

  it("links every page under docs/ from the README", () => {
    const linked = new Set(
      linksOf(readFileSync(join(ROOT, "README.md"), "utf8"))
        .filter(({ target }) => !isExternal(target))
        .map(({ target }) => decodeURIComponent(target.split("#")[0] ?? "")),
    );
    expect(docPages.length).toBeGreaterThan(0);
    expect(docPages.filter((page) => !linked.has(page))).toEqual([]);
  });

  it.each(manualFiles)("%s: every relative link and anchor resolves", (file) => {
    const text = readRepoFile(file);
    expect(text).toBeDefined();
    expect(brokenLinks(ROOT, file, text ?? "", readRepoFile)).toEqual([]);
  });

  it.each(manualFiles)("%s: every table has a header row", (file) => {
    expect(headerlessTables(file, readRepoFile(file) ?? "")).toEqual([]);
  });

  it.each(manualFiles)("%s: names no path into the shared directory", (file) => {
    expect(readRepoFile(file)).not.toMatch(/\.\.\/shared\b|\/work\/shared\b/);
  });
});

describe("the link check itself", () => {
  const files: Record<string, string> = {
    "docs/a.md":
      "# Title\n\n## Sizing and sharding\n\n## `set-password`\n\n## 5.1 Set the password\n",
  };
  const read = (path: string): string | undefined => files[path];
  const check = (markdown: string): string[] => brokenLinks(ROOT, "README.md", markdown, read);

  it("slugs headings as GitHub does", () => {
    expect(slugOf("5.1 Set the password")).toBe("51-set-the-password");
    expect(slugOf("`set-password`")).toBe("set-password");
    expect(slugOf("The state database (SQLite, `STATE_DB`)")).toBe(
      "the-state-database-sqlite-state_db",
    );
    expect(slugOf("Cursors: what the data says")).toBe("cursors-what-the-data-says");
    expect([...anchorsOf("# A\n## A\n```\n# not a heading\n```\n")]).toEqual(["a", "a-1"]);
  });

  it("accepts links that resolve", () => {
    expect(
      check(
        "[a](docs/a.md) [b](docs/a.md#sizing-and-sharding) [c](docs/a.md#51-set-the-password) " +
          "[d](docs/a.md#set-password) [e](https://example.com/x#y) [f](package.json)",
      ),
    ).toEqual([]);
  });

  it("finds a missing file, a missing anchor, paths outside the repository", () => {
    const problems = check(
      [
        "[gone](docs/gone.md)",
        "[anchor](docs/a.md#no-such-heading)",
        "[outside](../elsewhere.md)",
        "[spec](../spec/energy-monitoring-api.md)",
        "[json anchor](package.json#x)",
      ].join("\n"),
    );
    expect(problems).toHaveLength(5);
    expect(problems[0]).toContain("no such file");
    expect(problems[1]).toContain("no heading #no-such-heading");
    expect(problems[2]).toContain("outside the repository");
    expect(problems[3]).toContain("outside the repository");
    expect(problems[4]).toContain("not markdown");
  });

  it("finds a table without a header row, and only that one", () => {
    const headed = "| a | b |\n|---|---|\n| 1 | 2 |\n";
    const headless = "| 1 | 2 |\n| 3 | 4 |\n";
    expect(headerlessTables("x.md", `${headed}\ntext\n\n${headless}`)).toEqual([
      "x.md:7: a table without a header row",
    ]);
    expect(headerlessTables("x.md", "```\n| 1 | 2 |\n```\n")).toEqual([]);
  });

  it("ignores links in code blocks and inline code", () => {
    expect(check("```\n[x](docs/gone.md)\n```\n`[y](docs/gone.md)`\n")).toEqual([]);
  });
});
