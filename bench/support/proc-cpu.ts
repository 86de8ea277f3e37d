// CPU time of a process from /proc/<pid>/stat (utime + stime, every thread included): what a
// benchmark reports as the CPU-seconds a tool spends per GiB mirrored.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** User and system (kernel: socket copies, syscalls) CPU seconds `pid` has used so far. */
export function cpuSplit(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command (field 2) may hold spaces and parentheses: count fields from its closing one.
  // What follows starts at field 3 (state); utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / ticksPerSecond, system: Number(fields[12]) / ticksPerSecond };
}

/** User + system CPU seconds `pid` has used so far. */
export function cpuSeconds(pid: number): number {
  const { user, system } = cpuSplit(pid);
  return user + system;
}
