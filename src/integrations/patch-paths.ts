/**
 * The files a patch in the `*** Begin Patch` format writes (Codex's apply_patch, OpenCode's patch
 * tool): every `Add File`, `Update File`, `Delete File` header, and the `Move to` target of a rename.
 * The bodies are not read: a line of patch text that happens to start with `***` inside a hunk
 * begins with `+`, `-` or a space there, so only headers match.
 */
const HEADER = /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$/;

export function patchPaths(patch: string): string[] {
  const paths: string[] = [];
  for (const line of patch.split(/\r?\n/)) {
    const match = HEADER.exec(line);
    if (match?.[1] && !paths.includes(match[1])) paths.push(match[1]);
  }
  return paths;
}
