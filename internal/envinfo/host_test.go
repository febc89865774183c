package envinfo

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// testdata/root holds files captured from a 2-vCPU x86-64 Debian 12 VM:
// /proc/cpuinfo, /proc/meminfo, /proc/self/mountinfo, /etc/os-release and
// two /sys files. Its /sys/.../cpufreq is absent, as on that VM.

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "root", path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseCPUInfoCaptured(t *testing.T) {
	got := parseCPUInfo(open(t, "proc/cpuinfo"))
	want := cpuInfo{model: "Intel(R) Xeon(R) Processor", logical: 2, cores: 2, sockets: 1, hypervisor: true}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseCPUInfoVariants(t *testing.T) {
	cases := []struct {
		name, text string
		want       cpuInfo
	}{
		{
			name: "two sockets with hyperthreads",
			text: "" +
				"processor\t: 0\nmodel name\t: Xeon Gold\nphysical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu sse\n\n" +
				"processor\t: 1\nmodel name\t: Xeon Gold\nphysical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu sse\n\n" +
				"processor\t: 2\nmodel name\t: Xeon Gold\nphysical id\t: 1\ncore id\t\t: 0\nflags\t\t: fpu sse\n\n" +
				"processor\t: 3\nmodel name\t: Xeon Gold\nphysical id\t: 1\ncore id\t\t: 0\nflags\t\t: fpu sse\n",
			want: cpuInfo{model: "Xeon Gold", logical: 4, cores: 2, sockets: 2},
		},
		{
			name: "arm64 without model name or topology",
			text: "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n\n" +
				"processor\t: 1\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n\n" +
				"Hardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n",
			want: cpuInfo{model: "Raspberry Pi 4 Model B Rev 1.4", logical: 2},
		},
		{
			name: "power",
			text: "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\nclock\t\t: 2200.000000MHz\n\n" +
				"timebase\t: 512000000\nplatform\t: pSeries\n",
			want: cpuInfo{model: "POWER9 (architected), altivec supported", logical: 1},
		},
		{name: "empty", text: "", want: cpuInfo{}},
	}
	for _, c := range cases {
		if got := parseCPUInfo(strings.NewReader(c.text)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseMemInfo(t *testing.T) {
	mi := parseMemInfo(open(t, "proc/meminfo"))
	want := map[string]int64{
		"MemTotal":        24684092 * 1024,
		"MemAvailable":    24099708 * 1024,
		"SwapTotal":       0,
		"HugePages_Total": 0,
		"Hugepagesize":    2048 * 1024,
		"VmallocTotal":    34359738367 * 1024,
	}
	for k, v := range want {
		if got, ok := mi[k]; !ok || got != v {
			t.Errorf("%s = %d (present %v), want %d", k, got, ok, v)
		}
	}
	odd := parseMemInfo(strings.NewReader("MemTotal: 2 kB\nbroken line\nHugePages_Total:   16\nX: notanumber kB\n"))
	if !reflect.DeepEqual(odd, map[string]int64{"MemTotal": 2048, "HugePages_Total": 16}) {
		t.Errorf("odd input: %v", odd)
	}
}

func TestParseOSRelease(t *testing.T) {
	got := parseOSRelease(strings.NewReader("# c\nNAME=\"Fedora Linux\"\nID=fedora\nPRETTY_NAME='Fedora 40'\nX=\"a \\\"q\\\" b\"\n\n"))
	want := map[string]string{"NAME": "Fedora Linux", "ID": "fedora", "PRETTY_NAME": "Fedora 40", "X": `a "q" b`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
}

func TestSelectedMode(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never": "madvise",
		"[always] madvise never": "always",
		"tsc":                    "tsc",
		"":                       "",
	} {
		if got := selectedMode(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestHostFromCapturedRoot(t *testing.T) {
	src := hostSource{
		root:     filepath.Join("testdata", "root"),
		uname:    func() (string, string, error) { return "6.18.44-fc-v657", "#1 SMP PREEMPT_DYNAMIC @0", nil },
		hostname: func() (string, error) { return "vm", nil },
	}
	got := src.host()
	want := Host{
		Hostname:          "vm",
		OS:                runtime.GOOS,
		Distro:            "Debian GNU/Linux 12 (bookworm)",
		Arch:              runtime.GOARCH,
		Kernel:            "6.18.44-fc-v657",
		KernelVersion:     "#1 SMP PREEMPT_DYNAMIC @0",
		CPUModel:          "Intel(R) Xeon(R) Processor",
		CPUs:              2,
		CPUCores:          2,
		CPUSockets:        1,
		Hypervisor:        true,
		MemTotalBytes:     24684092 * 1024,
		MemAvailableBytes: 24099708 * 1024,
		SwapTotalBytes:    0,
		HugePagesTotal:    0,
		HugePageSizeBytes: 2048 * 1024,
		TransparentHuge:   "madvise",
		Clocksource:       "tsc",
	}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestHostMissingFiles(t *testing.T) {
	src := hostSource{
		root:     t.TempDir(),
		uname:    func() (string, string, error) { return "", "", errors.New("no") },
		hostname: func() (string, error) { return "", errors.New("no") },
	}
	got := src.host()
	if got.CPUs != runtime.NumCPU() || got.CPUModel != "" || got.MemTotalBytes != 0 || got.Kernel != "" {
		t.Errorf("got %+v", got)
	}
}

func TestHostInfoLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux /proc")
	}
	h := HostInfo()
	if h.CPUs < 1 || h.MemTotalBytes <= 0 || h.Kernel == "" || h.Hostname == "" {
		t.Errorf("implausible host info: %+v", h)
	}
}
