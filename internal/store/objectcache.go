package store

import (
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// cachedStorage is the local mirror's storage with its object cache
// consulted first. go-git's filesystem storage opens an object's file
// before it looks in the cache, and never caches what it writes; a
// variant's draft reads back the objects it has just written (to push
// them) and the same upstream objects over and over, so each of those
// reads would cost a path walk, an open and an inflate.
//
// It also writes loose objects itself, into objectsDir: go-git resolves
// every path component for symlinks on each file operation and deflates
// at the default level, whose compressor costs more to reset than these
// small objects cost to compress. The mirror is this process's own, so
// the plain file operations are safe.
type cachedStorage struct {
	*filesystem.Storage
	objects    cache.Object
	objectsDir string
}

func newCachedStorage(fs *filesystem.Storage, objects cache.Object, gitDir string) *cachedStorage {
	return &cachedStorage{Storage: fs, objects: objects, objectsDir: filepath.Join(gitDir, "objects")}
}

// EncodedObject returns the object from the cache, or from the disk.
func (s *cachedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := s.objects.Get(h); ok {
		if t != plumbing.AnyObject && obj.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return obj, nil
	}
	return s.Storage.EncodedObject(t, h)
}

// HasEncodedObject reports a cached object without touching the disk.
func (s *cachedStorage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.objects.Get(h); ok {
		return nil
	}
	return s.Storage.HasEncodedObject(h)
}

// SetEncodedObject writes the object as a loose object and caches it.
func (s *cachedStorage) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	if t := obj.Type(); t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	h := obj.Hash()
	if err := s.writeLoose(h, obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing object %s: %w", h, err)
	}
	s.objects.Put(obj)
	return h, nil
}

var zlibWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

// writeLoose writes objects/xx/yyyy the way git does: "<type> <size>\0"
// and the content, deflated, into a temporary file renamed into place, so
// a crash never leaves a partial object under its name.
func (s *cachedStorage) writeLoose(h plumbing.Hash, obj plumbing.EncodedObject) (err error) {
	hex := h.String()
	dir := filepath.Join(s.objectsDir, hex[:2])
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.CreateTemp(dir, "tmp_obj_")
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	content, err := obj.Reader()
	if err != nil {
		return err
	}
	defer content.Close()
	zw := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(zw)
	zw.Reset(f)
	header := append(append([]byte(obj.Type().String()+" "), strconv.FormatInt(obj.Size(), 10)...), 0)
	if _, err = zw.Write(header); err != nil {
		return err
	}
	if _, err = io.Copy(zw, content); err != nil {
		return err
	}
	if err = zw.Close(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, hex[2:]))
}
