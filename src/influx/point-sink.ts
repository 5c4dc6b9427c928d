/**
 * Where points go: InfluxDB ({@link InfluxWriter}) or a line-protocol file
 * ({@link LineProtocolFileSink}). Lines are InfluxDB line protocol with second precision.
 */
export interface PointSink {
  /** Where the points go, for logs and summaries (never contains a secret). */
  readonly target: string;
  /**
   * Writes lines. Resolves once they are accepted; rejects with an InfluxWriteError when they
   * were not (then none of them is reported written).
   */
  write(lines: readonly string[]): Promise<void>;
  /** Resolves once every write started before it has settled: the commit point. */
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Readiness: rejects with a one-line reason when the target cannot take writes now. */
  check?(): Promise<void>;
}
