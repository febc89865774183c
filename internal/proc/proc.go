// Package proc reads what tunebench needs to know of other processes from
// /proc: whether a recorded process still runs (a pid with its start time,
// so a reused pid is not taken for it), which processes work in a
// directory, and how to stop the processes a killed run left.
package proc

import (
	"github.com/tunebench/tunebench/internal/machine"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Stat reads a process's state (field 3 of /proc/PID/stat: R, S, Z ...),
// parent pid (field 4) and start time in clock ticks since boot (field
// 22); zero for what cannot be read.
func Stat(pid int) (state byte, ppid int, start uint64) {
	st, err := machine.ReadProcStat(pid)
	if err != nil {
		return 0, 0, 0
	}
	return st.State, st.PPID, st.StartTime
}

// Start is a process's start time (0 when unknown).
func Start(pid int) uint64 {
	_, _, start := Stat(pid)
	return start
}

// Exists reports whether pid exists (EPERM: it exists and is not ours).
func Exists(pid int) bool {
	if pid <= 0 {
		return false
	}
	return exists(pid)
}

// Alive reports whether the process recorded as pid with start time start
// still runs: it exists, is not a zombie, and (when both are known) started
// when recorded.
func Alive(pid int, start uint64) bool {
	if !Exists(pid) {
		return false
	}
	state, _, now := Stat(pid)
	if state == 'Z' || state == 'X' {
		return false // killed, not yet reaped
	}
	return start == 0 || now == 0 || now == start
}

// Under lists the processes that work on dir or below it: their working
// directory or one of their open files is there (a server whose data
// directory is on a mount point; fio with its files there).
func Under(dir string) []int {
	dir = filepath.Clean(dir)
	in := func(path string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && in(cwd) {
			pids = append(pids, pid)
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && in(target) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// Roots are the pids whose parent is not among pids (a server's
// postmaster, not its backends).
func Roots(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if _, ppid, _ := Stat(pid); !slices.Contains(pids, ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// Terminate asks the processes to end and waits until none of pids runs,
// or until wait has passed or ctx ends; it returns the pids still running.
// SIGTERM goes to the roots among them (a PostgreSQL postmaster then shuts
// its server down cleanly, backends included), and to each process whose
// parent has ended without it.
func Terminate(ctx context.Context, pids []int, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	asked := map[int]bool{}
	for {
		var left []int
		for _, pid := range pids {
			if Alive(pid, 0) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		for _, pid := range Roots(left) {
			if !asked[pid] {
				asked[pid] = true
				terminate(pid)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
