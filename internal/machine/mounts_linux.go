package machine

import (
	"bytes"
	"fmt"

	"github.com/moby/sys/mountinfo"
)

// Mounts is this process's mount table (/proc/thread-self/mountinfo).
func Mounts() ([]Mount, error) {
	infos, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	return fromInfos(infos), nil
}

// ParseMounts reads the text of a mountinfo file.
func ParseMounts(b []byte) ([]Mount, error) {
	infos, err := mountinfo.GetMountsFromReader(bytes.NewReader(b), nil)
	if err != nil {
		return nil, err
	}
	return fromInfos(infos), nil
}

func fromInfos(infos []*mountinfo.Info) []Mount {
	out := make([]Mount, len(infos))
	for i, in := range infos {
		out[i] = Mount{Major: in.Major, Minor: in.Minor, Root: in.Root, MountPoint: in.Mountpoint, Options: in.Options,
			FSType: in.FSType, Source: in.Source, SuperOptions: in.VFSOptions}
	}
	return out
}
