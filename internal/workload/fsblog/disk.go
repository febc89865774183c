package fsblog

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// Disk is the FS over a real directory.
type Disk struct {
	root  string
	fsync bool
	data  []byte // file contents: random bytes, so compressing filesystems cannot shrink them
	bufs  sync.Pool
	tmpID atomic.Uint64 // makes temporary names unique: two commenters may write the same comment at once
}

// NewDisk works in root (which must exist). With fsync, every file is
// fsynced before its rename and the blog directory after it, so a counted
// write is durable.
func NewDisk(root string, fsync bool, seed int64) *Disk {
	d := &Disk{root: root, fsync: fsync, data: make([]byte, PictureMaxSize+WriteChunk)}
	r := rand.New(rand.NewPCG(uint64(seed), 0x66736c6f67))
	for i := range d.data {
		d.data[i] = byte(r.Uint32())
	}
	d.bufs.New = func() any { b := make([]byte, ReadChunk); return &b }
	return d
}

// Root is the directory the blogs live in.
func (d *Disk) Root() string { return d.root }

func (d *Disk) blogDir(id int64) string { return filepath.Join(d.root, BlogName(id)) }

// NewBlog creates the blog's directory.
func (d *Disk) NewBlog(id int64) error {
	err := os.Mkdir(d.blogDir(id), 0o700)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Write writes NAME.tmpN in WriteChunk chunks, optionally fsyncs it, and
// renames it over NAME. N is unique per write (blogbench uses NAME.tmp, so
// two of its commenters writing the same comment of the same blog at once
// collide and one of them fails).
func (d *Disk) Write(id int64, k Kind, n, size int) error {
	dir := d.blogDir(id)
	final := filepath.Join(dir, FileName(k, n))
	tmp := final + ".tmp" + strconv.FormatUint(d.tmpID.Add(1), 10)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	off := (n * 4099) % WriteChunk // vary the contents between files
	for left := size; left > 0; {
		c := min(left, WriteChunk)
		if _, err := f.Write(d.data[off : off+c]); err != nil {
			return fail(err)
		}
		left -= c
		off = (off + c) % (len(d.data) - WriteChunk)
	}
	if d.fsync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return err
	}
	if d.fsync {
		return syncDir(dir)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Read reads the file whole in ReadChunk chunks.
func (d *Disk) Read(id int64, k Kind, n int) (int64, bool, error) {
	f, err := os.Open(filepath.Join(d.blogDir(id), FileName(k, n)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer f.Close()
	bp := d.bufs.Get().(*[]byte)
	defer d.bufs.Put(bp)
	buf := *bp
	var total int64
	for {
		m, err := f.Read(buf)
		total += int64(m)
		if err == io.EOF {
			return total, true, nil
		}
		if err != nil {
			return total, true, err
		}
	}
}
