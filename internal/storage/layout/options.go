package layout

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tunebench/tunebench/internal/option"
)

// Mount options tunebench knows, so that a typo is caught before a
// filesystem is made: the generic ones (mount(8)) and each filesystem's
// (ext4(5), xfs(5), btrfs(5)). An option with a value is written name=...
var genericMount = words0(`async sync dirsync atime noatime diratime nodiratime relatime norelatime strictatime
	nostrictatime lazytime nolazytime dev nodev exec noexec suid nosuid ro rw defaults iversion noiversion
	mand nomand auto noauto user nouser`)

var fsMount = map[string]map[string]bool{
	"ext2": words0(`acl noacl bsddf minixdf check=none nocheck debug errors= grpid bsdgroups nogrpid sysvgroups
		grpquota noquota quota usrquota nouid32 oldalloc orlov resgid= resuid= sb= user_xattr nouser_xattr`),
	"ext3": words0(`acl noacl bsddf minixdf debug errors= grpid bsdgroups nogrpid sysvgroups grpquota noquota quota
		usrquota nouid32 resgid= resuid= sb= user_xattr nouser_xattr journal_dev= journal_path= norecovery noload
		data= data_err= barrier= barrier nobarrier commit= user_xattr jqfmt= usrjquota= grpjquota=`),
	"ext4": words0(`acl noacl bsddf minixdf debug errors= grpid bsdgroups nogrpid sysvgroups grpquota noquota quota
		usrquota prjquota nouid32 resgid= resuid= sb= user_xattr nouser_xattr journal_dev= journal_path= norecovery
		noload data= data_err= barrier= barrier nobarrier commit= journal_checksum nojournal_checksum
		journal_async_commit inode_readahead_blks= stripe= delalloc nodelalloc max_batch_time= min_batch_time=
		journal_ioprio= abort auto_da_alloc noauto_da_alloc noinit_itable init_itable= discard nodiscard
		block_validity noblock_validity dioread_lock dioread_nolock i_version nombcache prefetch_block_bitmaps
		no_prefetch_block_bitmaps dax dax= mb_optimize_scan=`),
	"xfs": words0(`allocsize= attr2 noattr2 dax dax= discard nodiscard grpid bsdgroups nogrpid sysvgroups filestreams
		ikeep noikeep inode32 inode64 largeio nolargeio logbufs= logbsize= logdev= noalign norecovery nouuid noquota
		uquota usrquota quota uqnoenforce qnoenforce gquota grpquota gqnoenforce pquota prjquota pqnoenforce
		rtdev= sunit= swidth= swalloc wsync`),
	"btrfs": words0(`acl noacl autodefrag noautodefrag barrier nobarrier check_int check_int_data
		check_int_print_mask= clear_cache commit= compress compress= compress-force compress-force=
		datacow nodatacow datasum nodatasum degraded device= discard discard= nodiscard enospc_debug
		noenospc_debug fatal_errors= flushoncommit noflushoncommit fragment= nologreplay max_inline=
		metadata_ratio= norecovery rescan_uuid_tree rescue= skip_balance space_cache space_cache= nospace_cache
		ssd ssd_spread nossd nossd_spread subvol= subvolid= thread_pool= treelog notreelog usebackuproot
		user_subvol_rm_allowed`),
}

// conflicts are mount options that cannot be given together.
var conflicts = [][2]string{
	{"atime", "noatime"}, {"relatime", "noatime"}, {"strictatime", "noatime"}, {"strictatime", "relatime"},
	{"sync", "async"}, {"ro", "rw"}, {"barrier", "nobarrier"}, {"discard", "nodiscard"},
	{"delalloc", "nodelalloc"}, {"datacow", "nodatacow"}, {"nodatacow", "compress"}, {"nodatacow", "compress-force"},
	{"ssd", "nossd"}, {"acl", "noacl"}, {"lazytime", "nolazytime"},
}

// values are the accepted values of options that take one of a few.
var values = map[string][]string{
	"data":     {"journal", "ordered", "writeback"},
	"data_err": {"ignore", "abort"},
	"errors":   {"continue", "remount-ro", "panic"},
	"dax":      {"always", "never", "inode"},
}

func words0(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func checkMount(fs string, opts []string) []string {
	var ps []string
	given := map[string]string{}
	for _, o := range opts {
		name, val, hasVal := strings.Cut(o, "=")
		key := name
		if hasVal {
			key = name + "="
		}
		known := genericMount[key] || fsMount[fs][key]
		if !known && !hasVal && fsMount[fs][name+"="] {
			ps = append(ps, fmt.Sprintf("mount option %s needs a value (%s=...)", name, name))
			continue
		}
		if !known {
			msg := fmt.Sprintf("mount option %q is not one %s takes", o, fs)
			if c := closest(key, fs); c != "" {
				msg += "; did you mean " + strings.TrimSuffix(c, "=") + "?"
			}
			ps = append(ps, msg)
			continue
		}
		if vs, ok := values[name]; ok && hasVal && !contains(vs, val) {
			ps = append(ps, fmt.Sprintf("mount option %s=%s: use one of %s", name, val, strings.Join(vs, ", ")))
		}
		if prev, ok := given[name]; ok && prev != val {
			ps = append(ps, fmt.Sprintf("mount option %s is given twice (%s and %s)", name, prev, val))
		}
		given[name] = val
	}
	for _, c := range conflicts {
		if _, a := given[c[0]]; a {
			if _, b := given[c[1]]; b {
				ps = append(ps, fmt.Sprintf("mount options %s and %s contradict each other: keep one", c[0], c[1]))
			}
		}
	}
	if fs == "ext2" {
		if _, ok := given["data"]; ok {
			ps = append(ps, "mount option data= needs a journal: ext2 has none (use ext3 or ext4)")
		}
	}
	return ps
}

// closest suggests a known mount option within two edits of key.
func closest(key, fs string) string {
	all := map[string]bool{}
	for k := range genericMount {
		all[k] = true
	}
	for k := range fsMount[fs] {
		all[k] = true
	}
	return closestIn(key, all)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ext feature names mke2fs -O takes (ext4(5)), and -E extended options
// (mke2fs(8)).
var extFeatures = words0(`64bit bigalloc casefold dir_index dir_nlink ea_inode encrypt extent extents extra_isize
	filetype flex_bg has_journal huge_file inline_data journal_dev large_dir large_file metadata_csum
	metadata_csum_seed meta_bg mmp orphan_file project quota resize_inode sparse_super sparse_super2 stable_inodes
	uninit_bg verity`)

var extExtended = words0(`mmp_update_interval= stride= stripe_width= stripe-width= offset= resize= packed_meta_blocks=
	lazy_itable_init= lazy_journal_init= no_copy_xattrs num_backup_sb= root_owner= discard nodiscard quotatype=
	encoding= encoding_flags= orphan_file_size= assume_storage_prezeroed= test_fs`)

// checkMkfs catches what it can in mkfs arguments: options the layout sets
// itself (force, quiet), unknown ext features and extended options,
// unknown mkfs.xfs sections.
func checkMkfs(fs string, args []string) []string {
	var ps []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			ps = append(ps, fmt.Sprintf("mkfs option %s needs a value", a))
			return "", false
		}
		switch fs {
		case "ext2", "ext3", "ext4":
			switch a {
			case "-F", "-q":
				ps = append(ps, fmt.Sprintf("mkfs option %s: tunebench adds it itself; remove it", a))
			case "-O":
				if v, ok := next(); ok {
					for _, f := range strings.Split(v, ",") {
						f = strings.TrimPrefix(strings.TrimSpace(f), "^")
						if !extFeatures[f] {
							msg := fmt.Sprintf("mkfs -O: unknown ext feature %q", f)
							if c := closestIn(f, extFeatures); c != "" {
								msg += "; did you mean " + c + "?"
							}
							ps = append(ps, msg)
						}
					}
				}
			case "-E":
				if v, ok := next(); ok {
					for _, e := range strings.Split(v, ",") {
						name, _, hasVal := strings.Cut(strings.TrimSpace(e), "=")
						key := name
						if hasVal {
							key += "="
						}
						if !extExtended[key] {
							msg := fmt.Sprintf("mkfs -E: unknown extended option %q", e)
							if c := closestIn(key, extExtended); c != "" {
								msg += "; did you mean " + strings.TrimSuffix(c, "=") + "?"
							}
							ps = append(ps, msg)
						}
					}
				}
			case "-b", "-i", "-I", "-m", "-N", "-L", "-T", "-U", "-g", "-G", "-J", "-M", "-o", "-r", "-e", "-C", "-d", "-z", "-t":
				next()
			case "-c", "-j", "-n", "-S", "-v", "-D", "-K":
				if a == "-n" {
					ps = append(ps, "mkfs option -n makes nothing (a dry run); remove it")
				}
			default:
				ps = append(ps, fmt.Sprintf("mkfs option %q is not one mke2fs takes", a))
			}
		case "xfs":
			switch a {
			case "-f", "-q":
				ps = append(ps, fmt.Sprintf("mkfs option %s: tunebench adds it itself; remove it", a))
			case "-b", "-d", "-i", "-l", "-m", "-n", "-p", "-r", "-s", "-L", "-c":
				next()
			case "-K", "-N":
				if a == "-N" {
					ps = append(ps, "mkfs option -N makes nothing (a dry run); remove it")
				}
			default:
				ps = append(ps, fmt.Sprintf("mkfs option %q is not one mkfs.xfs takes (sections -b -d -i -l -m -n -r -s, -L, -K)", a))
			}
		case "btrfs":
			switch a {
			case "-f", "--force", "-q", "--quiet":
				ps = append(ps, fmt.Sprintf("mkfs option %s: tunebench adds it itself; remove it", a))
			case "-d", "--data", "-m", "--metadata", "-n", "--nodesize", "-s", "--sectorsize", "-L", "--label",
				"-O", "--features", "-R", "--runtime-features", "--csum", "-U", "--uuid", "-b", "--byte-count":
				next()
			case "-M", "--mixed", "-K", "--nodiscard":
			default:
				ps = append(ps, fmt.Sprintf("mkfs option %q is not one mkfs.btrfs takes", a))
			}
		}
	}
	return ps
}

func closestIn(key string, set map[string]bool) string {
	var all []string
	for k := range set {
		all = append(all, k)
	}
	sort.Strings(all)
	best, bestD := "", 3
	for _, k := range all {
		if d := option.EditDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}
