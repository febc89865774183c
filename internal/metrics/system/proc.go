package system

import (
	"github.com/tunebench/tunebench/internal/machine"

	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ParsePostmasterPID reads the postmaster's pid from the first line of a
// data directory's postmaster.pid.
func ParsePostmasterPID(b []byte) (int, error) {
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("postmaster.pid: bad pid line %q", first)
	}
	return pid, nil
}

// ReadPostmasterPID reads dataDir/postmaster.pid.
func ReadPostmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	return ParsePostmasterPID(b)
}

// ParentPID returns the parent of pid from procRoot/PID/stat (e.g. the
// postmaster of a backend).
func ParentPID(procRoot string, pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	st, err := machine.ParseProcStat(b)
	if err != nil {
		return 0, err
	}
	return st.PPID, nil
}

// Group is the summed state of a process and its children.
type Group struct {
	Procs int
	// CPUTicks is the CPU time of the live processes plus the time of the
	// root's waited-for children (exited backends), so it only grows while
	// the root lives.
	CPUTicks uint64
	// RSS counts private memory per process (RssAnon + RssFile) and the
	// shared memory once (the largest RssShmem), so shared_buffers is not
	// counted once per backend. Without the split (kernel < 4.5): the sum
	// of VmRSS.
	RSS   uint64
	Shmem uint64 // largest RssShmem
	// ReadBytes and WriteBytes are storage I/O of the live processes plus,
	// in the root's counters, its reaped children's. IOErr is set when some
	// process's io file could not be read (permissions); the byte counts
	// are then incomplete and should not be used.
	ReadBytes, WriteBytes uint64
	IOErr                 error
}

// ReadGroup reads root and its direct children (PostgreSQL's postmaster
// and its backends and auxiliary processes) under procRoot. Processes that
// exit while being read are skipped.
func ReadGroup(procRoot string, root int) (Group, error) {
	var r procReader
	return r.readGroup(procRoot, root)
}

// children appends root's children to pids from the kernel's lists of
// each of its threads' children (/proc/PID/task/TID/children, Linux 3.5+
// with CONFIG_PROC_CHILDREN): a few reads, where the scan read the stat
// file of every process on the machine, once a second (a tenth of the
// driver's CPU in an open-loop run of 500 transactions a second, with a
// hundred processes). ok is false when the lists cannot be read (root gone,
// or a kernel without them): the caller scans instead.
func (r *procReader) children(procRoot string, root int, pids []int) ([]int, bool) {
	dir := procRoot + "/" + strconv.Itoa(root) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return pids, false
	}
	r.names, err = d.Readdirnames(-1)
	d.Close()
	if err != nil || len(r.names) == 0 {
		return pids, false
	}
	listed := false
	for _, tid := range r.names {
		b, err := r.read(dir + "/" + tid + "/children")
		if err != nil {
			continue // the thread ended, or no such file
		}
		listed = true
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		}
	}
	return pids, listed
}

// scanChildren appends root's children to pids by reading the parent pid
// in the stat file of every process under procRoot.
func (r *procReader) scanChildren(procRoot string, root int, pids []int) ([]int, error) {
	d, err := os.Open(procRoot)
	if err != nil {
		return pids, err
	}
	r.names, err = d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return pids, err
	}
	rootSeen := false
	rootDir := strconv.Itoa(root)
	for _, name := range r.names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		if name == rootDir {
			rootSeen = true
			continue
		}
		b, err := r.read(procRoot + "/" + name + "/stat")
		if err != nil {
			continue // gone, or not a process directory
		}
		if machine.ParentPIDOf(b) == root {
			if pid, err := strconv.Atoi(name); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if !rootSeen {
		return pids, fmt.Errorf("process %d not found in %s (server stopped?)", root, procRoot)
	}
	return pids, nil
}

// procReader reads /proc files into a buffer it reuses.
type procReader struct {
	buf   []byte
	names []string
	pids  []int
}

func (r *procReader) readGroup(procRoot string, root int) (Group, error) {
	pids, ok := r.children(procRoot, root, append(r.pids[:0], root))
	if !ok {
		var err error
		if pids, err = r.scanChildren(procRoot, root, pids[:1]); err != nil {
			return Group{}, err
		}
	}
	r.pids = pids
	return SumGroup(root, pids, func(pid int, name string) ([]byte, error) {
		return r.read(procRoot + "/" + strconv.Itoa(pid) + "/" + name)
	})
}

// ProcFile reads a process's file under /proc/PID (stat, status or io): an
// error wrapping fs.ErrNotExist when the process or the file is gone.
type ProcFile func(pid int, name string) ([]byte, error)

// SumGroup sums the processes pids (root first: the postmaster, then its
// processes) from their stat, status and io files. A process gone while
// being read is left out; the root's stat must be read.
func SumGroup(root int, pids []int, read ProcFile) (Group, error) {
	var g Group
	var maxShm uint64
	split := true
	var sumVmRSS, sumPrivate uint64
	for _, pid := range pids {
		b, err := read(pid, "stat")
		if err != nil {
			if pid == root {
				return g, err
			}
			continue
		}
		st, err := machine.ParseProcStat(b)
		if err != nil {
			return g, err
		}
		g.Procs++
		g.CPUTicks += st.UTime + st.STime
		if pid == root {
			g.CPUTicks += st.CUTime + st.CSTime
		}
		if b, err := read(pid, "status"); err == nil {
			if ps, err := machine.ParseProcStatus(b); err == nil {
				sumVmRSS += ps.VmRSS
				sumPrivate += ps.RssAnon + ps.RssFile
				split = split && ps.HasRssSplit
				maxShm = max(maxShm, ps.RssShmem)
			}
		}
		b, err = read(pid, "io")
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && g.IOErr == nil {
				g.IOErr = err
			}
			continue
		}
		pio, err := machine.ParseProcIO(b)
		if err != nil {
			if g.IOErr == nil {
				g.IOErr = err
			}
			continue
		}
		g.ReadBytes += pio.ReadBytes
		g.WriteBytes += pio.WriteBytes
	}
	if split {
		g.RSS = sumPrivate + maxShm
		g.Shmem = maxShm
	} else {
		g.RSS = sumVmRSS
	}
	return g, nil
}
