package envinfo

import (
	"reflect"
	"strings"
	"testing"
)

// testdata/fsfeatures holds outputs captured on a Debian 12 VM (e2fsprogs
// 1.47.0, xfsprogs 6.1.0, btrfs-progs 6.2) from filesystems made with the
// default options on loop files: a 64 MiB ext4 (mounted, hence
// needs_recovery), a 300 MiB xfs and a 256 MiB btrfs.

func TestParseDumpe2fsCaptured(t *testing.T) {
	got := parseDumpe2fs(strings.NewReader(captured(t, "dumpe2fs-ext4-loop.txt")))
	want := &FSFeatures{
		Features: []string{"has_journal", "ext_attr", "resize_inode", "dir_index", "filetype", "extent", "64bit",
			"flex_bg", "sparse_super", "large_file", "huge_file", "dir_nlink", "extra_isize", "metadata_csum"},
		BlockSize: 1024,
		Details: map[string]string{"inode_size": "256", "journal_size": "4096k", "journal_features": "journal_64bit journal_checksum_v3",
			"default_mount_options": "user_xattr acl", "flex_bg_size": "16"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if line := got.Line(); !strings.HasPrefix(line, "block 1024; has_journal ext_attr") ||
		!strings.HasSuffix(line, "; default_mount_options user_xattr acl, flex_bg_size 16, inode_size 256, journal_features journal_64bit journal_checksum_v3, journal_size 4096k") {
		t.Errorf("line %q", line)
	}
}

func TestParseDumpe2fsVariants(t *testing.T) {
	// ext2 from an older e2fsprogs: no journal, RAID geometry, no default
	// mount options.
	text := `dumpe2fs 1.42.9 (28-Dec-2013)
Filesystem features:      ext_attr resize_inode dir_index filetype sparse_super large_file
Default mount options:    (none)
Block size:               4096
Inode size:	          256
RAID stride:              16
RAID stripe width:        64
`
	got := parseDumpe2fs(strings.NewReader(text))
	want := &FSFeatures{Features: []string{"ext_attr", "resize_inode", "dir_index", "filetype", "sparse_super", "large_file"},
		BlockSize: 4096, Details: map[string]string{"inode_size": "256", "raid_stride": "16", "raid_stripe_width": "64"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got := parseDumpe2fs(strings.NewReader("")); got.Features == nil || len(got.Features) != 0 || got.Details != nil || got.BlockSize != 0 {
		t.Errorf("empty output: %+v", got)
	}
}

func TestParseXFSInfoCaptured(t *testing.T) {
	got := parseXFSInfo(strings.NewReader(captured(t, "xfs_info.txt")))
	want := &FSFeatures{
		Features:  []string{"projid32bit", "crc", "finobt", "sparse", "reflink", "bigtime", "inobtcount", "ftype", "lazy-count"},
		BlockSize: 4096,
		Details: map[string]string{"inode_size": "512", "agcount": "4", "sector_size": "512", "attr": "2",
			"log": "internal", "log_size": "67108864"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseXFSInfoStriped(t *testing.T) {
	// A striped xfs with an external log and 8 KiB directory blocks.
	text := `meta-data=/dev/md0               isize=512    agcount=32, agsize=30523648 blks
         =                       sectsz=4096  attr=2, projid32bit=1
         =                       crc=1        finobt=1, sparse=1, rmapbt=1
         =                       reflink=1    bigtime=1 inobtcount=1 nrext64=0
data     =                       bsize=4096   blocks=976756736, imaxpct=5
         =                       sunit=128    swidth=256 blks
naming   =version 2              bsize=8192   ascii-ci=0, ftype=1
log      =/dev/sdc1              bsize=4096   blocks=521728, version=2
         =                       sectsz=4096  sunit=1 blks, lazy-count=1
realtime =none                   extsz=4096   blocks=0, rtextents=0
`
	got := parseXFSInfo(strings.NewReader(text))
	want := map[string]string{"inode_size": "512", "agcount": "32", "sector_size": "4096", "attr": "2",
		"log": "/dev/sdc1", "log_size": "2136997888", "sunit": "128", "swidth": "256", "dir_block_size": "8192"}
	if !reflect.DeepEqual(got.Details, want) {
		t.Errorf("details %v\nwant    %v", got.Details, want)
	}
	if strings.Join(got.Features, " ") != "projid32bit crc finobt sparse rmapbt reflink bigtime inobtcount ftype lazy-count" {
		t.Errorf("features %v", got.Features) // log sunit=1 is a size, not a feature
	}
}

func TestParseBtrfsSuperCaptured(t *testing.T) {
	got := parseBtrfsSuper(strings.NewReader(captured(t, "btrfs-dump-super.txt")))
	want := &FSFeatures{
		Features:  []string{"free_space_tree", "free_space_tree_valid", "mixed_backref", "extended_iref", "skinny_metadata", "no_holes"},
		BlockSize: 4096,
		Details:   map[string]string{"node_size": "16384", "devices": "1", "checksum": "crc32c"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
