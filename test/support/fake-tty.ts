/**
 * Makes a stream of {@link bufferIo} look like a terminal `columns` wide, as process.stdout and
 * process.stderr are on one (tables fit it, progress bars are drawn).
 */
export function asTerminal<T extends object>(
  stream: T,
  columns: number,
): T & { isTTY: true; columns: number } {
  return Object.assign(stream, { isTTY: true as const, columns });
}
