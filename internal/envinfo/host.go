package envinfo

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Host describes the machine.
type Host struct {
	Hostname      string `json:"hostname"`
	OS            string `json:"os"`               // GOOS, e.g. "linux"
	Distro        string `json:"distro,omitempty"` // PRETTY_NAME from /etc/os-release
	Arch          string `json:"arch"`             // GOARCH
	Kernel        string `json:"kernel"`           // uname -r
	KernelVersion string `json:"kernel_version"`   // uname -v
	CPUModel      string `json:"cpu_model"`
	CPUs          int    `json:"cpus"`                  // logical CPUs online
	CPUCores      int    `json:"cpu_cores,omitempty"`   // physical cores, when the kernel says
	CPUSockets    int    `json:"cpu_sockets,omitempty"` // packages, when the kernel says
	Hypervisor    bool   `json:"hypervisor"`            // the CPU reports running under a hypervisor
	MemTotalBytes int64  `json:"mem_total_bytes"`
	// MemAvailableBytes is the kernel's estimate of memory available for new
	// work when the snapshot was taken (page cache counts as available).
	MemAvailableBytes int64  `json:"mem_available_bytes"`
	SwapTotalBytes    int64  `json:"swap_total_bytes"`
	HugePagesTotal    int64  `json:"hugepages_total"` // preallocated huge pages (HugePages_Total)
	HugePageSizeBytes int64  `json:"hugepage_size_bytes,omitempty"`
	TransparentHuge   string `json:"transparent_hugepages,omitempty"` // selected mode: always, madvise or never
	Clocksource       string `json:"clocksource,omitempty"`           // e.g. tsc, kvm-clock, hpet
	CPUGovernor       string `json:"cpu_governor,omitempty"`          // cpufreq governor of cpu0
}

// HostInfo describes this machine. Fields that cannot be read are left empty.
func HostInfo() Host {
	h := hostSource{root: "/", uname: uname, hostname: os.Hostname}.host()
	if runtime.GOOS != "linux" {
		portableHost(&h)
	}
	return h
}

// hostSource is where HostInfo reads from; tests point root at captured
// files and replace the system calls.
type hostSource struct {
	root     string
	uname    func() (release, version string, err error)
	hostname func() (string, error)
}

func (src hostSource) open(path string) (*os.File, error) {
	return os.Open(filepath.Join(src.root, path))
}

// firstLine returns the first line of a small file, trimmed; "" on error.
func (src hostSource) firstLine(path string) string {
	f, err := src.open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	return strings.TrimSpace(line)
}

func (src hostSource) host() Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if src.hostname != nil {
		if n, err := src.hostname(); err == nil {
			h.Hostname = n
		}
	}
	if src.uname != nil {
		if rel, ver, err := src.uname(); err == nil {
			h.Kernel, h.KernelVersion = rel, ver
		}
	}
	if f, err := src.open("etc/os-release"); err == nil {
		h.Distro = parseOSRelease(f)["PRETTY_NAME"]
		f.Close()
	}
	if f, err := src.open("proc/cpuinfo"); err == nil {
		ci := parseCPUInfo(f)
		f.Close()
		h.CPUModel, h.CPUs, h.CPUCores, h.CPUSockets, h.Hypervisor = ci.model, ci.logical, ci.cores, ci.sockets, ci.hypervisor
	}
	if h.CPUs == 0 {
		h.CPUs = runtime.NumCPU()
	}
	if f, err := src.open("proc/meminfo"); err == nil {
		mi := parseMemInfo(f)
		f.Close()
		h.MemTotalBytes = mi["MemTotal"]
		h.MemAvailableBytes = mi["MemAvailable"]
		h.SwapTotalBytes = mi["SwapTotal"]
		h.HugePagesTotal = mi["HugePages_Total"]
		h.HugePageSizeBytes = mi["Hugepagesize"]
	}
	h.TransparentHuge = selectedMode(src.firstLine("sys/kernel/mm/transparent_hugepage/enabled"))
	h.Clocksource = src.firstLine("sys/devices/system/clocksource/clocksource0/current_clocksource")
	h.CPUGovernor = src.firstLine("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
	return h
}

// cpuInfo is what HostInfo uses from /proc/cpuinfo.
type cpuInfo struct {
	model      string
	logical    int // "processor" entries
	cores      int // distinct (physical id, core id) pairs; 0 if not reported
	sockets    int // distinct physical ids; 0 if not reported
	hypervisor bool
}

// parseCPUInfo reads /proc/cpuinfo text: blocks of "key<tabs>: value" lines,
// one block per logical CPU (on x86; other architectures add a trailing
// block of machine-wide keys).
func parseCPUInfo(r io.Reader) cpuInfo {
	var ci cpuInfo
	type coreKey struct{ pkg, core string }
	cores := map[coreKey]bool{}
	sockets := map[string]bool{}
	var pkg, core string
	haveCore := false
	// Model names by preference: x86 "model name", POWER "cpu", others.
	models := map[string]string{}
	endBlock := func() {
		if haveCore {
			cores[coreKey{pkg, core}] = true
			sockets[pkg] = true
		}
		pkg, core, haveCore = "", "", false
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024) // flags lines are long
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			endBlock()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			// On x86 and arm64 the value is the CPU number; s390x uses
			// "processor 0" keys instead, which fall through to default.
			if _, err := strconv.Atoi(v); err == nil {
				ci.logical++
			}
		case "physical id":
			pkg = v
		case "core id":
			core, haveCore = v, true
		case "flags", "Features":
			for _, f := range strings.Fields(v) {
				if f == "hypervisor" {
					ci.hypervisor = true
				}
			}
		case "model name", "cpu", "cpu model", "Model", "Hardware", "Processor":
			if _, seen := models[k]; !seen && v != "" {
				models[k] = v
			}
		}
	}
	endBlock()
	for _, k := range []string{"model name", "cpu", "cpu model", "Model", "Hardware", "Processor"} {
		if m := models[k]; m != "" {
			ci.model = m
			break
		}
	}
	ci.cores = len(cores)
	ci.sockets = len(sockets)
	return ci
}

// parseMemInfo reads /proc/meminfo text ("Key:   value [kB]") into bytes
// (values without a unit, such as HugePages_Total, are counts).
func parseMemInfo(r io.Reader) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 {
			switch strings.ToLower(f[1]) {
			case "kb":
				n *= 1024
			case "mb":
				n *= 1024 * 1024
			case "gb":
				n *= 1024 * 1024 * 1024
			}
		}
		out[strings.TrimSpace(k)] = n
	}
	return out
}

// parseOSRelease reads os-release(5) text: KEY=value lines, values optionally
// quoted.
func parseOSRelease(r io.Reader) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			if v[0] == '"' {
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				} else {
					v = v[1 : len(v)-1]
				}
			} else {
				v = v[1 : len(v)-1]
			}
		}
		out[k] = v
	}
	return out
}

// selectedMode picks the bracketed choice of a sysfs multiple-choice file,
// e.g. "always [madvise] never" -> "madvise".
func selectedMode(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return s
	}
	return s[i+1 : j]
}
