package store

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/scion-dev/scion/internal/pkg"
)

// writeBlob stores data as a blob, unless the store already has it.
func (r *Repository) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.BlobObject)
	if _, err := obj.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.storeObject(obj)
}

// storeObject writes an encoded object unless the store already has it:
// package writes mostly repeat existing files and folders.
func (r *Repository) storeObject(obj *plumbing.MemoryObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if r.storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	return r.storer.SetEncodedObject(obj)
}

// writeTreeEntries stores a tree, sorting its entries the way git does
// (directories compare as if their name ended in '/').
func (r *Repository) writeTreeEntries(entries []object.TreeEntry) (plumbing.Hash, error) {
	sortKey := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return sortKey(entries[i]) < sortKey(entries[j]) })
	t := &object.Tree{Entries: entries}
	obj := &plumbing.MemoryObject{}
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.storeObject(obj)
}

// writePackageTree stores the files of a package as a tree.
func (r *Repository) writePackageTree(p *pkg.Package) (plumbing.Hash, error) {
	type dir struct {
		files map[string]plumbing.Hash
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string]plumbing.Hash{}, dirs: map[string]*dir{}} }
	root := newDir()
	for _, name := range p.Paths() {
		data, _ := p.File(name)
		h, err := r.writeBlob(data)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("writing %s: %w", name, err)
		}
		d := root
		parts := strings.Split(name, "/")
		for _, part := range parts[:len(parts)-1] {
			sub, ok := d.dirs[part]
			if !ok {
				sub = newDir()
				d.dirs[part] = sub
			}
			d = sub
		}
		d.files[parts[len(parts)-1]] = h
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		var entries []object.TreeEntry
		for name, h := range d.files {
			if _, clash := d.dirs[name]; clash {
				return plumbing.ZeroHash, fmt.Errorf("%q is both a file and a folder", name)
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
		}
		for name, sub := range d.dirs {
			h, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		return r.writeTreeEntries(entries)
	}
	return write(root)
}

// replaceSubtree returns the hash of a copy of the tree root whose entry at
// the slash-separated path p is sub; a zero sub removes the entry. A zero
// root is the empty tree. Folders left empty are dropped, as git does.
func (r *Repository) replaceSubtree(root plumbing.Hash, p string, sub plumbing.Hash) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !root.IsZero() {
		t, err := object.GetTree(r.storer, root)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading tree %s: %w", root, err)
		}
		entries = append(entries, t.Entries...)
	}
	head, rest, nested := strings.Cut(p, "/")
	idx := -1
	for i, e := range entries {
		if e.Name == head {
			idx = i
			break
		}
	}
	newHash := sub
	if nested {
		child := plumbing.ZeroHash
		if idx >= 0 {
			if entries[idx].Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%q is a file, not a folder", head)
			}
			child = entries[idx].Hash
		}
		h, err := r.replaceSubtree(child, rest, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		newHash = h
	}
	if idx >= 0 {
		entries = append(entries[:idx], entries[idx+1:]...)
	}
	if !newHash.IsZero() && newHash != emptyTreeHash {
		entries = append(entries, object.TreeEntry{Name: head, Mode: filemode.Dir, Hash: newHash})
	}
	return r.writeTreeEntries(entries)
}

// emptyTreeHash is the well-known hash of the empty tree.
var emptyTreeHash = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

func (r *Repository) ensureEmptyTree() error {
	_, err := r.writeTreeEntries(nil)
	return err
}

// subtree returns the hash of the tree at p inside the tree of a commit,
// or ErrNotFound.
func (r *Repository) subtree(commit plumbing.Hash, p string) (plumbing.Hash, error) {
	c, err := object.GetCommit(r.storer, commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", commit, ErrUnknownCommit)
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	t, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading tree of %s: %w", commit, err)
	}
	if p == "" {
		return t.Hash, nil // the repository's root
	}
	e, err := t.FindEntry(p)
	if err != nil {
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return plumbing.ZeroHash, fmt.Errorf("%s not found in commit %s: %w", p, short(commit.String()), ErrNotFound)
		}
		return plumbing.ZeroHash, err
	}
	if e.Mode != filemode.Dir {
		return plumbing.ZeroHash, fmt.Errorf("%s in commit %s is not a folder: %w", p, short(commit.String()), ErrNotFound)
	}
	return e.Hash, nil
}

// readTreeFiles reads every file below a tree into a package. A path no
// package may hold (pkg.ValidPath: a .git folder, a control character),
// which git could have been given by hand, fails the read with a
// *pkg.PathError naming it: the tree is walked here, not by go-git's
// walker, whose own check fails without saying which rule.
func (r *Repository) readTreeFiles(tree plumbing.Hash, pkgPath string) (*pkg.Package, error) {
	files := map[string][]byte{}
	limits := r.opts.Limits.orDefaults()
	var total int64
	var walk func(tree plumbing.Hash, dir string) error
	walk = func(tree plumbing.Hash, dir string) error {
		t, err := object.GetTree(r.storer, tree)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			name := e.Name
			if dir != "" {
				name = dir + "/" + e.Name
			}
			if err := pkg.ValidPath(name); err != nil {
				return fmt.Errorf("package %s: %w", pkgPath, err)
			}
			switch {
			case e.Mode == filemode.Submodule:
				continue
			case e.Mode == filemode.Dir:
				if err := walk(e.Hash, name); err != nil {
					return err
				}
				continue
			}
			b, err := object.GetBlob(r.storer, e.Hash)
			if err != nil {
				return fmt.Errorf("reading %s: %w", name, err)
			}
			// Sizes come from the objects' headers: nothing over a limit
			// is read into memory.
			total += b.Size
			if err := limits.checkFile(pkgPath, name, b.Size, len(files)+1, total); err != nil {
				return err
			}
			data, err := readBlob(b)
			if err != nil {
				return fmt.Errorf("reading %s: %w", name, err)
			}
			files[name] = data
		}
		return nil
	}
	if err := walk(tree, ""); Unreadable(err) {
		return nil, err // what the package holds, named already
	} else if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", tree, err)
	}
	return pkg.New(files), nil
}

// readBlob reads a blob's content.
func readBlob(b *object.Blob) ([]byte, error) {
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// signature is the author or tagger Scion records.
func (r *Repository) signature(name string) object.Signature {
	email := r.opts.Email
	if name == "" {
		name = r.opts.Author
	}
	if name == "" {
		name = "Scion"
	}
	if email == "" {
		email = "scion@localhost"
	}
	return object.Signature{Name: name, Email: email, When: time.Now().UTC().Truncate(time.Second)}
}

// writeCommit stores a commit.
func (r *Repository) writeCommit(tree plumbing.Hash, parents []plumbing.Hash, msg string, author object.Signature) (plumbing.Hash, error) {
	var ps []plumbing.Hash
	for _, p := range parents {
		if !p.IsZero() {
			ps = append(ps, p)
		}
	}
	c := &object.Commit{Author: author, Committer: author, Message: msg, TreeHash: tree, ParentHashes: ps}
	obj := r.storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.storer.SetEncodedObject(obj)
}

// writeTag stores an annotated tag object.
func (r *Repository) writeTag(name string, target plumbing.Hash, tagger object.Signature, msg string) (plumbing.Hash, error) {
	t := &object.Tag{Name: name, Tagger: tagger, Message: msg, TargetType: plumbing.CommitObject, Target: target}
	obj := r.storer.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.storer.SetEncodedObject(obj)
}

// peel resolves a ref value to a commit: an annotated tag is followed to
// its target, a commit is returned as it is.
func (r *Repository) peel(h plumbing.Hash) (plumbing.Hash, *object.Tag, error) {
	obj, err := r.storer.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("object %s: %w", short(h.String()), ErrNotFound)
	}
	switch obj.Type() {
	case plumbing.CommitObject:
		return h, nil, nil
	case plumbing.TagObject:
		t, err := object.DecodeTag(r.storer, obj)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		c, err := t.Commit()
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("tag %s does not point at a commit: %w", t.Name, err)
		}
		return c.Hash, t, nil
	default:
		return plumbing.ZeroHash, nil, fmt.Errorf("object %s is a %s, not a commit: %w", short(h.String()), obj.Type(), ErrNotFound)
	}
}

func joinPath(dir, p string) string {
	if dir == "" {
		return p
	}
	return path.Join(dir, p)
}
