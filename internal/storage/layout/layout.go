// Package layout describes storage layouts (a filesystem made on a device
// or a loop file, its mkfs and mount options, readahead, I/O scheduler,
// and optionally a second layout for the WAL), checks them without
// touching anything, plans the commands that provision and tear them down,
// and runs those plans. Experiments vary layouts like any setting; the
// managed server's data directory (or the fio/fsblog directory) is put on
// the mounted filesystem.
package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
)

// Layout is one storage layout.
type Layout struct {
	Name string `json:"name"`
	// Devices are block devices to make the filesystem on (destroyed:
	// they need --allow-destroy); empty means a loop file of LoopSize.
	Devices  []string `json:"devices,omitempty"`
	LoopSize int64    `json:"loop_size,omitempty"` // bytes
	// Filesystem is ext2, ext3, ext4, xfs or btrfs.
	Filesystem string   `json:"filesystem"`
	Mkfs       []string `json:"mkfs,omitempty"`  // extra mkfs arguments
	Mount      []string `json:"mount,omitempty"` // mount options
	// Readahead in bytes (blockdev --setra takes 512-byte sectors); 0
	// leaves the device's.
	Readahead int64 `json:"readahead,omitempty"`
	// Scheduler is the I/O scheduler to select ("" leaves the device's).
	Scheduler string `json:"scheduler,omitempty"`
	// WAL is a layout for pg_wal (initdb --waldir); nil keeps it in the
	// data directory.
	WAL *Layout `json:"wal,omitempty"`
	// Reuse keeps one filesystem for all the configurations on the layout
	// in an experiment (the default makes a fresh one per configuration;
	// its repetitions and warm-up runs share it).
	Reuse bool `json:"reuse,omitempty"`
	// Keep leaves the loop file in place after teardown.
	Keep bool `json:"keep,omitempty"`
	// RAID or LVM build a volume on the devices (or loop files) first.
	RAID *RAID `json:"raid,omitempty"`
	LVM  *LVM  `json:"lvm,omitempty"`
}

// Filesystems are the filesystems a layout may name, with their mkfs.
var Filesystems = map[string]string{
	"ext2": "mkfs.ext2", "ext3": "mkfs.ext3", "ext4": "mkfs.ext4", "xfs": "mkfs.xfs", "btrfs": "mkfs.btrfs",
}

// packages name the Debian package of each mkfs, for the fix line.
var packages = map[string]string{"ext2": "e2fsprogs", "ext3": "e2fsprogs", "ext4": "e2fsprogs", "xfs": "xfsprogs", "btrfs": "btrfs-progs"}

// File is a layouts file: `layouts:` maps names to layouts.
type File struct {
	Layouts map[string]*Layout
	// Lines are the file lines of the layouts, for messages.
	Lines map[string]int
}

// Names lists the layouts in name order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Layouts))
	for n := range f.Layouts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// rawLayout is a layout as written in YAML.
type rawLayout struct {
	Devices    []string   `yaml:"devices"`
	Device     string     `yaml:"device"`
	Loop       string     `yaml:"loop"`
	Filesystem string     `yaml:"filesystem"`
	Mkfs       any        `yaml:"mkfs"`
	Mount      any        `yaml:"mount"`
	Readahead  string     `yaml:"readahead"`
	Scheduler  string     `yaml:"scheduler"`
	WAL        *rawLayout `yaml:"wal"`
	Reuse      bool       `yaml:"reuse"`
	Keep       bool       `yaml:"keep"`
	RAID       *rawRAID   `yaml:"raid"`
	LVM        *rawLVM    `yaml:"lvm"`
}

// Parse reads a layouts file (a YAML mapping with `layouts:`; other
// top-level keys, such as an experiment's, are ignored). Every problem is
// reported, one per line, as "file:line: message".
func Parse(path string, src []byte) (*File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, errs.Usage("fix the YAML syntax", "%s: %v", path, err)
	}
	f := &File{Layouts: map[string]*Layout{}, Lines: map[string]int{}}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errs.Usage("write `layouts:` with one entry per layout", "%s: not a YAML mapping", path)
	}
	top := root.Content[0]
	var lnode *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "layouts" {
			lnode = top.Content[i+1]
		}
	}
	if lnode == nil || lnode.Kind != yaml.MappingNode {
		return nil, errs.Usage("add `layouts:` mapping names to layouts, e.g.\n  layouts:\n    ext4-noatime: {loop: 2GiB, filesystem: ext4, mount: [noatime]}",
			"%s: no layouts", path)
	}
	layouts, lines, ps := ParseNode(lnode)
	f.Layouts, f.Lines = layouts, lines
	var problems []string
	for _, p := range ps {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", path, p.Line, p.Msg))
	}
	if len(problems) > 0 {
		return nil, errs.Usage("fix the lines above; `tunebench storage layout check FILE` checks a file without touching anything",
			"%s", strings.Join(problems, "\n"))
	}
	return f, nil
}

// Problem is one thing wrong in a layouts mapping, at a line of its file.
type Problem struct {
	Line int
	Msg  string
}

// ParseNode reads the mapping of layout names to layouts (the value of
// `layouts:` in a layouts or experiment file): the layouts, their lines,
// and every problem.
func ParseNode(lnode *yaml.Node) (map[string]*Layout, map[string]int, []Problem) {
	layouts, lines := map[string]*Layout{}, map[string]int{}
	var problems []Problem
	if lnode == nil || lnode.Kind != yaml.MappingNode {
		line := 0
		if lnode != nil {
			line = lnode.Line
		}
		return layouts, lines, []Problem{{line, "layouts must map names to layouts, e.g. ext4-noatime: {loop: 2GiB, filesystem: ext4, mount: [noatime]}"}}
	}
	for i := 0; i+1 < len(lnode.Content); i += 2 {
		k, v := lnode.Content[i], lnode.Content[i+1]
		if !nameRe.MatchString(k.Value) {
			problems = append(problems, Problem{k.Line, fmt.Sprintf("layout name %q: use letters, digits, '.', '_' and '-'", k.Value)})
			continue
		}
		var raw rawLayout
		if err := strictDecode(v, &raw); err != nil {
			problems = append(problems, Problem{k.Line, fmt.Sprintf("layout %s: %v", k.Value, err)})
			continue
		}
		l, ps := fromRaw(k.Value, &raw)
		for _, p := range ps {
			problems = append(problems, Problem{k.Line, fmt.Sprintf("layout %s: %s", k.Value, p)})
		}
		layouts[k.Value] = l
		lines[k.Value] = k.Line
	}
	return layouts, lines, problems
}

// strictDecode decodes n into v refusing unknown keys.
func strictDecode(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n  ")
		return fmt.Errorf("%s (keys: devices, loop, filesystem, mkfs, mount, readahead, scheduler, wal, reuse, keep, raid, lvm)", msg)
	}
	return nil
}

func fromRaw(name string, r *rawLayout) (*Layout, []string) {
	var ps []string
	l := &Layout{Name: name, Filesystem: strings.ToLower(strings.TrimSpace(r.Filesystem)), Scheduler: strings.TrimSpace(r.Scheduler), Reuse: r.Reuse, Keep: r.Keep}
	l.Devices = append(l.Devices, r.Devices...)
	if r.Device != "" {
		l.Devices = append(l.Devices, r.Device)
	}
	if r.Loop != "" {
		n, err := ParseSize(r.Loop)
		if err != nil {
			ps = append(ps, "loop: "+err.Error())
		}
		l.LoopSize = n
	}
	var err error
	if l.Mkfs, err = words(r.Mkfs); err != nil {
		ps = append(ps, "mkfs: "+err.Error())
	}
	if l.Mount, err = options(r.Mount); err != nil {
		ps = append(ps, "mount: "+err.Error())
	}
	if r.Readahead != "" {
		n, err := ParseSize(r.Readahead)
		if err != nil {
			ps = append(ps, "readahead: "+err.Error())
		}
		l.Readahead = n
	}
	ps = append(ps, fromRawVolume(l, r.RAID, r.LVM)...)
	if r.WAL != nil {
		w, wps := fromRaw(name+".wal", r.WAL)
		for _, p := range wps {
			ps = append(ps, "wal: "+p)
		}
		if r.WAL.WAL != nil {
			ps = append(ps, "wal: a WAL layout has no WAL of its own")
		}
		l.WAL = w
	}
	return l, append(ps, Check(l)...)
}

// words reads mkfs arguments: a list, or one string split on spaces.
func words(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(t), nil
	case []any:
		var out []string
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				s = fmt.Sprint(e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("give a list of arguments or one string")
}

// options reads mount options: a list, or one comma-separated string.
func options(v any) ([]string, error) {
	var out []string
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		for _, o := range strings.Split(t, ",") {
			if o = strings.TrimSpace(o); o != "" {
				out = append(out, o)
			}
		}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("option %v is not a string", e)
			}
			out = append(out, strings.TrimSpace(s))
		}
	default:
		return nil, fmt.Errorf("give a list of options or one comma-separated string")
	}
	return out, nil
}

var sizeRe = regexp.MustCompile(`^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|[kmgt]|B)?\s*$`)

// ParseSize reads "2GiB", "512M", "128KiB", "4096": binary units.
func ParseSize(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size: write e.g. 512MiB, 2GiB or 128KiB", s)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	mult := map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
	if u := strings.ToUpper(m[2]); u != "" && u != "B" {
		f *= mult[u[0]]
	}
	return int64(f), nil
}

// Check validates a layout without touching anything: the filesystem and
// its mkfs, the device or loop size, mkfs and mount options it can tell
// are wrong, readahead and scheduler. It returns one message per problem.
func Check(l *Layout) []string {
	var ps []string
	if _, ok := Filesystems[l.Filesystem]; !ok {
		if l.Filesystem == "" {
			ps = append(ps, "no filesystem: add filesystem: ext4 (or ext2, ext3, xfs, btrfs)")
		} else {
			ps = append(ps, fmt.Sprintf("unknown filesystem %q: use one of ext2, ext3, ext4, xfs, btrfs", l.Filesystem))
		}
		return ps
	}
	switch {
	case len(l.Devices) == 0 && l.LoopSize == 0:
		ps = append(ps, "no device and no loop size: add loop: 2GiB to try it on a loop file, or devices: [/dev/...]")
	case len(l.Devices) > 0 && l.LoopSize > 0:
		ps = append(ps, "both devices and loop: give one")
	case l.LoopSize > 0 && l.capacity() < minSize(l.Filesystem):
		ps = append(ps, fmt.Sprintf("loop: %s is smaller than %s can be made on (%s)", human.Bytes(l.capacity()), l.Filesystem, human.Bytes(minSize(l.Filesystem))))
	case len(l.Devices) > 1 && l.Filesystem != "btrfs" && l.RAID == nil && l.LVM == nil:
		ps = append(ps, fmt.Sprintf("%d devices: only btrfs spans several devices itself; for %s, add raid: {level: 0} or lvm: {stripes: %d}", len(l.Devices), l.Filesystem, len(l.Devices)))
	}
	ps = append(ps, checkVolume(l)...)
	for _, d := range l.Devices {
		if !filepath.IsAbs(d) {
			ps = append(ps, fmt.Sprintf("device %q: give its absolute path, e.g. /dev/sdb", d))
		}
	}
	ps = append(ps, checkMkfs(l.Filesystem, l.Mkfs)...)
	ps = append(ps, checkMount(l.Filesystem, l.Mount)...)
	if l.Readahead < 0 || l.Readahead%512 != 0 {
		ps = append(ps, fmt.Sprintf("readahead %d bytes: use a multiple of 512 bytes (blockdev counts 512-byte sectors), e.g. 128KiB", l.Readahead))
	}
	if l.Scheduler != "" && !regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(l.Scheduler) {
		ps = append(ps, fmt.Sprintf("scheduler %q: use a name /sys/block/DEV/queue/scheduler lists, e.g. mq-deadline, bfq, kyber, none", l.Scheduler))
	}
	return ps
}

// capacity is the size of the device a loop layout's filesystem is made
// on: the loop size, times the members a RAID 0 or an LVM volume spans
// (the loop size for the mirrored and parity levels, a safe lower bound).
func (l *Layout) capacity() int64 {
	n := int64(l.memberCount())
	switch {
	case l.LVM != nil, l.RAID != nil && l.RAID.Level == "0":
		return l.LoopSize * n
	}
	return l.LoopSize
}

// minSize is the smallest filesystem its mkfs makes.
func minSize(fs string) int64 {
	switch fs {
	case "xfs":
		return 300 << 20
	case "btrfs":
		return 128 << 20
	}
	return 8 << 20
}

// Installed reports whether the layout's mkfs is on this machine, with the
// fix when it is not.
func Installed(l *Layout) error {
	if err := volumeSupport(l); err != nil {
		return err
	}
	mkfs := Filesystems[l.Filesystem]
	if _, err := lookPath(mkfs); err != nil {
		return errs.New(errs.KindEnvironment, "install it: apt-get install "+packages[l.Filesystem],
			"layout %s needs %s, which is not installed", l.Name, mkfs)
	}
	return nil
}

var lookPath = func(name string) (string, error) {
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}
