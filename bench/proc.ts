/**
 * What the benches read of a process from Linux's /proc: its CPU time and its resident memory.
 */
import { readFileSync } from 'node:fs';

/** CPU time (user + system, all threads) a process has used so far, ms (/proc/<pid>/stat, 10 ms ticks). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // the fields after the name start at field 3 (state): utime is field 14, stime field 15
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resident memory of a process, bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}
