package store

import (
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
type cachedStorage struct {
	*filesystem.Storage
	objects cache.Object
}

func newCachedStorage(fs *filesystem.Storage, objects cache.Object) *cachedStorage {
	return &cachedStorage{Storage: fs, objects: objects}
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

// SetEncodedObject writes the object and caches it.
func (s *cachedStorage) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h, err := s.Storage.SetEncodedObject(obj)
	if err == nil {
		s.objects.Put(obj)
	}
	return h, err
}
