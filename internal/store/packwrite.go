package store

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/hash"
)

// compressors are reused zlib writers. Each one holds about a megabyte
// of deflate state; go-git's packfile encoder makes a new one for every
// pack, which was a quarter of what the controller allocated per variant
// (one pack for every local write and one for every push). They compress
// at zlib's best speed, as git does loose objects (core.looseCompression):
// the objects are small, the default level cost twice the time (most of
// it clearing its match tables for every object) for 2 % fewer bytes.
var compressors = sync.Pool{New: func() any {
	zw, err := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	if err != nil {
		panic(err) // a constant, valid level
	}
	return zw
}}

// objectSource is where writePackfile reads objects: a storer, or the
// objects of packs being merged.
type objectSource interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}

// writePackfile writes the objects of st named by hashes to w as a
// version 2 packfile without deltas: what a local write or a push of a
// few drafts carries (git stores small objects loose or repacks them
// anyway; a delta search cost more than the bytes it saved).
func writePackfile(w io.Writer, st objectSource, hashes []plumbing.Hash) error {
	sum := hash.New(hash.CryptoType)
	bw := bufio.NewWriter(io.MultiWriter(w, sum))
	zw := compressors.Get().(*zlib.Writer)
	defer func() {
		zw.Reset(nil) // hold on to no writer in the pool
		compressors.Put(zw)
	}()

	var head [12]byte
	copy(head[:4], "PACK")
	binary.BigEndian.PutUint32(head[4:8], 2)
	binary.BigEndian.PutUint32(head[8:12], uint32(len(hashes)))
	if _, err := bw.Write(head[:]); err != nil {
		return err
	}
	for _, h := range hashes {
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("object %s: %w", h, err)
		}
		if err := writePackEntry(bw, zw, obj); err != nil {
			return fmt.Errorf("object %s: %w", h, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// writePackEntry writes one undeltified object: its type and size, then
// its content compressed.
func writePackEntry(w io.Writer, zw *zlib.Writer, obj plumbing.EncodedObject) error {
	size := obj.Size()
	t := obj.Type()
	if t < plumbing.CommitObject || t > plumbing.TagObject {
		return fmt.Errorf("cannot pack an object of type %s", t)
	}
	// The first byte holds the type and the low 4 bits of the size; each
	// next one 7 more bits, while the high bit says more follow.
	head := make([]byte, 0, 10)
	b := byte(t)<<4 | byte(size&0x0f)
	for size >>= 4; size != 0; size >>= 7 {
		head = append(head, b|0x80)
		b = byte(size & 0x7f)
	}
	if _, err := w.Write(append(head, b)); err != nil {
		return err
	}
	r, err := obj.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	zw.Reset(w)
	if _, err := io.Copy(zw, r); err != nil {
		return err
	}
	return zw.Close()
}
