package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"
)

// Open returns the cloud cfg describes, like New, and when cfg.StateFile names a file,
// keeps the cloud's state in it:
//
//   - No file at the path: a new cloud, as cfg describes it. Open writes its state there
//     at once, so that a path that cannot be written fails the start, not the first
//     create.
//   - A fake cloud's state file: the cloud as the file holds it (load balancers, routes,
//     address pool cursors, ID sequences, instances), with the instances cfg changed since
//     the previous start applied (see the package documentation).
//   - Anything else (an empty, truncated or foreign file, a newer format): an error naming
//     the file and what is wrong with it. Open never writes over such a file.
//   - A symbolic link: the file it names, as above; every write replaces that file, and
//     the link stays a link. A link that names no file (dangling) is an error naming the
//     link and its target, never a new cloud.
//
// From then on each write is saved to the file, atomically and durably, before it
// returns success; a write that cannot be saved fails with cloudapi.ErrTransient and is
// undone. Every call first reads the file again when another Cloud (in this or another
// process) changed it since. Without a state file Open is New: no I/O.
func Open(cfg Config, opts ...Option) (*Cloud, error) {
	path := cfg.StateFile
	cfg.StateFile = ""
	c, err := New(cfg, opts...)
	if err != nil || path == "" {
		return c, err
	}
	c.cfg.StateFile = path
	f, err := openStateFile(path)
	if err != nil {
		return nil, fmt.Errorf("fake cloud: %w", err)
	}
	c.file = f
	for _, in := range c.cfg.Instances {
		c.configInstances = append(c.configInstances, toStateInstance(c.cfg.cloudInstance(in)))
	}
	if err := c.start(); err != nil {
		f.close()
		return nil, fmt.Errorf("fake cloud: %w", err)
	}
	return c, nil
}

// maxStateFileSize bounds the state file Open and the calls read: a larger file is not one
// this package wrote (a thousand load balancers take about a megabyte).
const maxStateFileSize = 1 << 30

// openLockTimeout bounds how long Open waits for the lock of a state file that another
// process holds: Open has no caller's context, and a writer holds the lock only for one
// write, so a lock held this long belongs to a process that hangs.
var openLockTimeout = 30 * time.Second

// stateFile is where a cloud opened with a state file keeps its state: the file at path,
// replaced as a whole on each write (a temporary file path+".tmp" written, synced and
// renamed over it, then the directory synced), and path+".lock", which every writer holds
// locked (flock) from reading the file to replacing it, so that Clouds sharing the file,
// in any process, write one after the other and each on the latest state.
type stateFile struct {
	path string // absolute

	// mu is held by every call of the cloud: it sees the file's state and leaves its own
	// change saved (or undone) before the next call begins.
	mu   sync.Mutex
	lock *os.File
	// held is the state file as this cloud last read or wrote it, kept open so that its
	// inode cannot be reused: the file is current while the path still names held (and
	// its size and modification time are unchanged).
	held     *os.File
	heldInfo os.FileInfo
	// stale is set when a save failed: the memory may hold the change that was not saved,
	// so the next call reads the file again.
	stale bool
}

func openStateFile(path string) (*stateFile, error) {
	if !stateFilesSupported {
		return nil, fmt.Errorf("stateFile %s: state files need file locking (flock), which this build for %s does not have", path, goos)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("stateFile %s: %w", path, err)
	}
	// A symbolic link is followed (through every link of a chain), so that writes replace
	// the file it names, never the link. A link that names no file is refused rather than
	// written through: it is most often a link into a volume that is not mounted (yet), and
	// a new, empty cloud written there would diverge from the one in the volume.
	if info, err := os.Lstat(abs); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			target, _ := os.Readlink(abs)
			return nil, fmt.Errorf("state file %s: a symbolic link to %s, which names no file (%w): the fake writes through a link, never over it; mount or create its target, or set stateFile to the target's path to start a new cloud there", abs, target, err)
		}
		abs = resolved
	} else if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved // a link among the directories
	}
	dir := filepath.Dir(abs)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("state file %s: its directory %s does not exist or is not a directory (the fake creates the file, not its directory)", abs, dir)
	}
	lock, err := os.OpenFile(abs+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state file %s: its lock file: %w", abs, err)
	}
	return &stateFile{path: abs, lock: lock}, nil
}

func (f *stateFile) close() {
	_ = f.lock.Close()
	if f.held != nil {
		_ = f.held.Close()
	}
}

// start brings the cloud Open built from its config and the state file together, under
// the file's lock: a new cloud is saved, a saved one is loaded with the config's changed
// instances applied.
func (c *Cloud) start() error {
	f := c.file
	ctx, cancel := context.WithTimeout(context.Background(), openLockTimeout)
	defer cancel()
	if err := lockFile(ctx, f.lock); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("another process has held it for %s: stop that process, or give this cloud a state file of its own: %w", openLockTimeout, err)
		}
		return fmt.Errorf("state file %s: locking %s.lock: %w", f.path, f.path, err)
	}
	defer unlockFile(f.lock)
	doc, err := f.read()
	if errors.Is(err, fs.ErrNotExist) {
		return c.saveLocked() // the first start of this cloud
	}
	if err != nil {
		return err
	}
	config := c.configInstances
	merged, changed := mergeInstances(doc.ConfigInstances, doc.Instances, config)
	changed = changed || !slices.EqualFunc(doc.ConfigInstances, config, func(a, b stateInstance) bool { return reflect.DeepEqual(a, b) })
	doc.Instances, doc.ConfigInstances = merged, config
	c.mu.Lock()
	c.netMu.Lock()
	c.applyState(doc)
	c.netMu.Unlock()
	c.mu.Unlock()
	if changed {
		return c.saveLocked()
	}
	return nil
}

// enter begins a call: on a cloud with a state file it holds the file's mutex (and, for a
// write, its lock) and reads the file again if it changed since this cloud last read or
// wrote it. Call the returned function when the call is done. Without a state file it
// does nothing.
func (c *Cloud) enter(ctx context.Context, write bool) (leave func(), err error) {
	f := c.file
	if f == nil {
		return leaveNothing, nil
	}
	f.mu.Lock()
	if write {
		if err := lockFile(ctx, f.lock); err != nil {
			f.mu.Unlock()
			return nil, fmt.Errorf("state file %s: locking %s.lock: %w", f.path, f.path, err)
		}
	}
	if err := c.refresh(); err != nil {
		if write {
			unlockFile(f.lock)
		}
		f.mu.Unlock()
		return nil, err
	}
	return func() {
		if write {
			unlockFile(f.lock)
		}
		f.mu.Unlock()
	}, nil
}

func leaveNothing() {}

// refresh reads the state file again when it is not the one this cloud last read or
// wrote, or when a save failed since. The caller holds file.mu.
func (c *Cloud) refresh() error {
	f := c.file
	if !f.stale {
		info, err := os.Stat(f.path)
		switch {
		case err == nil && os.SameFile(info, f.heldInfo) && info.Size() == f.heldInfo.Size() && info.ModTime().Equal(f.heldInfo.ModTime()):
			return nil
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("state file %s: removed while the cloud was using it; the cloud answers no call until it is back (a restart would start a new, empty cloud)", f.path)
		case err != nil:
			return fmt.Errorf("state file %s: %w", f.path, err)
		}
	}
	doc, err := f.read()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.netMu.Lock()
	c.applyState(doc)
	c.netMu.Unlock()
	c.mu.Unlock()
	f.stale = false
	return nil
}

// read reads and checks the state file and holds it open as the current one. An error
// names the file; a missing file is fs.ErrNotExist.
func (f *stateFile) read() (*stateDoc, error) {
	in, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", f.path, err)
	}
	doc, info, err := func() (*stateDoc, os.FileInfo, error) {
		info, err := in.Stat()
		switch {
		case err != nil:
			return nil, nil, err
		case !info.Mode().IsRegular():
			return nil, nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
		case info.Size() > maxStateFileSize:
			return nil, nil, fmt.Errorf("%d bytes is larger than any state file (at most %d), so it is not one", info.Size(), maxStateFileSize)
		}
		data, err := io.ReadAll(io.LimitReader(in, maxStateFileSize+1))
		if err != nil {
			return nil, nil, err
		}
		doc, err := decodeState(data)
		return doc, info, err
	}()
	if err != nil {
		_ = in.Close()
		return nil, fmt.Errorf("state file %s: %w", f.path, err)
	}
	f.hold(in, info)
	return doc, nil
}

func (f *stateFile) hold(file *os.File, info os.FileInfo) {
	if f.held != nil {
		_ = f.held.Close()
	}
	f.held, f.heldInfo = file, info
}

// save writes the cloud's state to its state file, if it has one, after a write changed
// it in memory. When that fails the change is undone: the next call reads the file again.
// The caller holds file.mu and the file's lock (see enter).
func (c *Cloud) save() error {
	if c.file == nil {
		return nil
	}
	return c.saveLocked()
}

func (c *Cloud) saveLocked() error {
	f := c.file
	c.mu.RLock()
	c.netMu.Lock()
	sizeHint := 0
	if f.heldInfo != nil {
		sizeHint = int(f.heldInfo.Size())
	}
	data, err := c.encodeState(sizeHint)
	c.netMu.Unlock()
	c.mu.RUnlock()
	if err == nil {
		err = f.write(data)
	}
	if err != nil {
		f.stale = true
		return fmt.Errorf("saving state file %s: %w", f.path, err)
	}
	return nil
}

// write replaces the state file with data: path+".tmp" (a leftover of a writer that died
// is removed first) written and synced, renamed over the file, and the directory synced,
// so that after a crash the file is either the old or the new state, never a part.
func (f *stateFile) write(data []byte) error {
	tmp := f.path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := out.Write(data); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	info, err := out.Stat()
	if err != nil {
		return err
	}
	// Open resolved a link to the file it names; a link put at the path since would be
	// replaced by the rename, and the file it names left behind.
	if now, err := os.Lstat(f.path); err == nil && now.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s became a symbolic link since the cloud opened it; the fake writes through a link, never over it: restart the cloud to follow it", f.path)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return err
	}
	renamed = true
	f.hold(out, info)
	dir, err := os.Open(filepath.Dir(f.path))
	if err != nil {
		return err
	}
	err = dir.Sync()
	return errors.Join(err, dir.Close())
}
