package envinfo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FSFeatures is a compact summary of a filesystem's on-disk format, parsed
// from the tool that reads it (dumpe2fs -h, xfs_info) or from
// /sys/fs/btrfs: what mkfs chose, which shapes the result as much as the
// mount options do.
type FSFeatures struct {
	// Source says where the summary was read, e.g. "dumpe2fs -h /dev/loop0",
	// "xfs_info /mnt/x", "/sys/fs/btrfs/<fsid>".
	Source string `json:"source"`
	// Features are the enabled on-disk features as the filesystem names
	// them (ext4: has_journal extent 64bit ...; xfs: crc reflink ...;
	// btrfs: no_holes free_space_tree ...), in the order the source lists
	// them.
	Features  []string `json:"features"`
	BlockSize int64    `json:"block_size,omitempty"` // bytes
	// Details are further values that describe the format, by name (those
	// the source shows): ext2/3/4's inode_size, journal_size,
	// journal_features, default_mount_options, flex_bg_size, raid_stride,
	// raid_stripe_width; xfs's inode_size, agcount, sector_size, attr, log
	// ("internal" or the log device), log_size (bytes), sunit, swidth,
	// dir_block_size, realtime; btrfs's node_size, checksum, devices,
	// data_profile, metadata_profile, system_profile.
	Details map[string]string `json:"details,omitempty"`
}

// toolTimeout caps each command the snapshot runs: a snapshot is taken
// before every run and must not hold it up.
const toolTimeout = 2 * time.Second

// toolOutputLimit caps what is read of a command's output (dumpe2fs -h
// prints about 2 KiB).
const toolOutputLimit = 256 << 10

// runFunc runs a command and returns its standard output; the error says
// why it failed in one line.
type runFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

// errNoTool is returned by runTool when the program is not installed.
var errNoTool = errors.New("not installed")

// fsFeatures reads the on-disk format of the filesystem f, whose block
// device is b (nil when unknown). It returns nil and no warning for a
// filesystem it has no reader for (tmpfs, overlay, nfs...).
func (src storageSource) fsFeatures(ctx context.Context, f *FS, b *Block) (*FSFeatures, string) {
	// The node of the device found in /sys: a mount's source may name a
	// node that does not exist (/dev/root).
	dev := src.devNode(b)
	if dev == "" && strings.HasPrefix(f.Source, "/dev/") && exists(f.Source) {
		dev = f.Source
	}
	switch f.FSType {
	case "ext2", "ext3", "ext4":
		if dev == "" {
			return nil, "no device node to read with dumpe2fs"
		}
		out, err := src.run(ctx, "dumpe2fs", "-h", dev)
		if err != nil {
			return nil, toolWarning("dumpe2fs -h "+dev, "e2fsprogs", err)
		}
		ff := parseDumpe2fs(bytes.NewReader(out))
		ff.Source = "dumpe2fs -h " + dev
		return ff, ""
	case "xfs":
		out, err := src.run(ctx, "xfs_info", f.MountPoint)
		if err != nil {
			return nil, toolWarning("xfs_info "+f.MountPoint, "xfsprogs", err)
		}
		ff := parseXFSInfo(bytes.NewReader(out))
		ff.Source = "xfs_info " + f.MountPoint
		return ff, ""
	case "btrfs":
		if b != nil {
			if dir := btrfsSysDir(src.sysRoot, b.Name); dir != "" {
				return btrfsFromSys(dir), ""
			}
		}
		// A kernel without /sys/fs/btrfs/<fsid>: the superblock, which
		// needs read access to the device.
		if dev == "" {
			return nil, "no device node to read with btrfs inspect-internal dump-super"
		}
		out, err := src.run(ctx, "btrfs", "inspect-internal", "dump-super", dev)
		if err != nil {
			return nil, toolWarning("btrfs inspect-internal dump-super "+dev, "btrfs-progs", err)
		}
		ff := parseBtrfsSuper(bytes.NewReader(out))
		ff.Source = "btrfs inspect-internal dump-super " + dev
		return ff, ""
	}
	return nil, ""
}

// toolWarning says why a command gave nothing and what would help.
func toolWarning(cmd, pkg string, err error) string {
	msg := cmd + ": " + err.Error()
	switch {
	case errors.Is(err, errNoTool):
		msg += " (install " + pkg + ")"
	case os.Geteuid() != 0 && (strings.Contains(err.Error(), "Permission denied") || strings.Contains(err.Error(), "not permitted")):
		msg += " (reading the device needs root or the disk group)"
	}
	return msg
}

// runTool runs a program found on PATH or in the sbin directories (which an
// unprivileged user's PATH often lacks), in the C locale, for at most
// toolTimeout.
func runTool(ctx context.Context, name string, args ...string) ([]byte, error) {
	path, err := lookTool(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.WaitDelay = time.Second
	stdout := &capped{max: toolOutputLimit}
	stderr := &capped{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("no answer within %s", toolTimeout)
	}
	if err != nil {
		if line := lastLine(string(stderr.buf)); line != "" {
			return nil, errors.New(line)
		}
		return nil, err
	}
	return stdout.buf, nil
}

// lookTool finds a program on PATH, else in /usr/sbin or /sbin.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s %w", name, errNoTool)
}

// capped keeps the first max bytes written to it and discards the rest. It
// is not a bytes.Buffer: io.Copy would use the buffer's ReadFrom, which has
// no limit.
type capped struct {
	buf []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// parseDumpe2fs reads the superblock summary `dumpe2fs -h` prints:
// "Name:   value" lines. needs_recovery is left out of the features: it
// says the journal is in use (the filesystem is mounted), not how it was
// made.
func parseDumpe2fs(r io.Reader) *FSFeatures {
	ff := &FSFeatures{Features: []string{}, Details: map[string]string{}}
	details := map[string]string{
		"Inode size":            "inode_size",
		"Journal size":          "journal_size", // e2fsprogs before 1.46
		"Total journal size":    "journal_size",
		"Journal features":      "journal_features",
		"Default mount options": "default_mount_options",
		"Flex block group size": "flex_bg_size",
		"RAID stride":           "raid_stride",
		"RAID stripe width":     "raid_stripe_width",
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "Filesystem features":
			for _, f := range strings.Fields(v) {
				if f != "needs_recovery" {
					ff.Features = append(ff.Features, f)
				}
			}
		case "Block size":
			ff.BlockSize, _ = strconv.ParseInt(v, 10, 64)
		default:
			if name := details[k]; name != "" && v != "" && v != "(none)" {
				ff.Details[name] = v
			}
		}
	}
	if len(ff.Details) == 0 {
		ff.Details = nil
	}
	return ff
}

// xfsNumeric are the xfs_info keys that hold sizes and counts; every other
// key with the value 1 is an enabled feature (crc=1, reflink=1, ftype=1...).
var xfsNumeric = map[string]bool{
	"isize": true, "agcount": true, "agsize": true, "sectsz": true, "attr": true, "bsize": true,
	"blocks": true, "imaxpct": true, "sunit": true, "swidth": true, "extsz": true,
	"rtextents": true, "version": true,
}

// parseXFSInfo reads xfs_info's geometry: sections (meta-data, data,
// naming, log, realtime) of key=value pairs, a section continued on lines
// that start with "=":
//
//	meta-data=/dev/loop1             isize=512    agcount=4, agsize=19200 blks
//	         =                       crc=1        finobt=1, sparse=1, rmapbt=0
//	log      =internal log           bsize=4096   blocks=16384, version=2
func parseXFSInfo(r io.Reader) *FSFeatures {
	ff := &FSFeatures{Features: []string{}}
	kv := map[string]string{} // "section.key" -> value; "section" -> its value
	section := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		head, rest, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if h := strings.TrimSpace(head); h != "" {
			section = h
		}
		var label []string
		seenPair := false
		for _, tok := range strings.Fields(strings.ReplaceAll(rest, ",", " ")) {
			k, v, isPair := strings.Cut(tok, "=")
			if !isPair {
				if !seenPair {
					label = append(label, tok) // "internal log", "version 2", "none"
				}
				continue
			}
			seenPair = true
			kv[section+"."+k] = v
			if v == "1" && !xfsNumeric[k] {
				ff.Features = append(ff.Features, k)
			}
		}
		if len(label) > 0 {
			kv[section] = strings.Join(label, " ")
		}
	}
	ff.BlockSize, _ = strconv.ParseInt(kv["data.bsize"], 10, 64)
	d := map[string]string{}
	set := func(name, v string) {
		if v != "" {
			d[name] = v
		}
	}
	set("inode_size", kv["meta-data.isize"])
	set("agcount", kv["meta-data.agcount"])
	set("sector_size", kv["meta-data.sectsz"])
	set("attr", kv["meta-data.attr"])
	if l := kv["log"]; l != "" {
		set("log", strings.TrimSuffix(l, " log")) // "internal" or the external device
	}
	logBlocks, err1 := strconv.ParseInt(kv["log.blocks"], 10, 64)
	logBsize, err2 := strconv.ParseInt(kv["log.bsize"], 10, 64)
	if err1 == nil && err2 == nil {
		set("log_size", strconv.FormatInt(logBlocks*logBsize, 10))
	}
	if kv["data.sunit"] != "" && kv["data.sunit"] != "0" {
		set("sunit", kv["data.sunit"])
		set("swidth", kv["data.swidth"])
	}
	if nb := kv["naming.bsize"]; nb != "" && nb != kv["data.bsize"] {
		set("dir_block_size", nb)
	}
	if rt := kv["realtime"]; rt != "" && rt != "none" {
		set("realtime", rt)
	}
	if len(d) > 0 {
		ff.Details = d
	}
	return ff
}

// btrfsProfiles are the block-group profiles btrfs lists under
// /sys/fs/btrfs/<fsid>/allocation/<type>/.
var btrfsProfiles = map[string]bool{
	"single": true, "dup": true, "raid0": true, "raid1": true, "raid1c3": true, "raid1c4": true,
	"raid10": true, "raid5": true, "raid6": true,
}

// btrfsSysDir finds /sys/fs/btrfs/<fsid> of the filesystem on device name
// (listed in its devices/ directory); "" when there is none.
func btrfsSysDir(sysRoot, name string) string {
	base := filepath.Join(sysRoot, "fs", "btrfs")
	ents, err := os.ReadDir(base)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		dir := filepath.Join(base, e.Name())
		if _, err := os.Lstat(filepath.Join(dir, "devices", name)); err == nil {
			return dir
		}
	}
	return ""
}

// btrfsFromSys reads a mounted btrfs's format from /sys/fs/btrfs/<fsid>:
// its features, sector and node size, checksum, devices and the profile of
// each kind of block group. Nothing there needs root.
func btrfsFromSys(dir string) *FSFeatures {
	ff := &FSFeatures{Source: filepath.Join("/sys/fs/btrfs", filepath.Base(dir)), Features: []string{}}
	if ents, err := os.ReadDir(filepath.Join(dir, "features")); err == nil {
		for _, e := range ents {
			ff.Features = append(ff.Features, e.Name())
		}
	}
	ff.BlockSize, _ = sysInt(dir, "sectorsize")
	d := map[string]string{}
	if v := sysString(dir, "nodesize"); v != "" {
		d["node_size"] = v
	}
	if f := strings.Fields(sysString(dir, "checksum")); len(f) > 0 {
		d["checksum"] = f[0] // "crc32c (crc32c-lib)": the driver is the kernel's choice
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "devices")); err == nil {
		d["devices"] = strconv.Itoa(len(ents))
	}
	for _, kind := range []string{"data", "metadata", "system"} {
		ents, err := os.ReadDir(filepath.Join(dir, "allocation", kind))
		if err != nil {
			continue
		}
		var ps []string
		for _, e := range ents {
			if e.IsDir() && btrfsProfiles[e.Name()] {
				ps = append(ps, e.Name())
			}
		}
		if len(ps) > 0 {
			d[kind+"_profile"] = strings.Join(ps, ",")
		}
	}
	if len(d) > 0 {
		ff.Details = d
	}
	return ff
}

// parseBtrfsSuper reads `btrfs inspect-internal dump-super`: "key<tabs>value"
// lines, flag sets continued on the following lines:
//
//	incompat_flags		0x341
//				( MIXED_BACKREF |
//				  NO_HOLES )
//
// The features are the compat_ro and incompat flags, lower-cased as
// /sys/fs/btrfs names them.
func parseBtrfsSuper(r io.Reader) *FSFeatures {
	ff := &FSFeatures{Features: []string{}}
	d := map[string]string{}
	key := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ") {
			// a continuation line of the flags of key
			if key == "compat_ro_flags" || key == "incompat_flags" {
				for _, tok := range strings.Fields(strings.NewReplacer("(", " ", ")", " ", "|", " ").Replace(line)) {
					ff.Features = append(ff.Features, strings.ToLower(tok))
				}
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			key = ""
			continue
		}
		key = f[0]
		switch key {
		case "sectorsize":
			ff.BlockSize, _ = strconv.ParseInt(f[1], 10, 64)
		case "nodesize":
			d["node_size"] = f[1]
		case "num_devices":
			d["devices"] = f[1]
		case "csum_type":
			if len(f) >= 3 {
				d["checksum"] = strings.Trim(f[2], "()") // "0 (crc32c)"
			}
		}
	}
	if len(d) > 0 {
		ff.Details = d
	}
	return ff
}
