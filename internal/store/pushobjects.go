package store

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/revlist"
)

// errWalkTooFar stops the incremental walk when it strays from what the
// remote advertises.
var errWalkTooFar = errors.New("walk too far")

// maxNewCommits bounds the commits the incremental walk includes before it
// falls back to a full revision walk.
const maxNewCommits = 64

// objectsToPush returns the objects the remote needs to accept news,
// given the ref values it advertised. Scion's commits build on advertised
// commits, so it diffs each new commit's tree against its parents' trees:
// the cost is proportional to what changed, not to the history. When a
// parent is not advertised it falls back to go-git's full walk.
func (r *Repository) objectsToPush(news []plumbing.Hash, advertised []plumbing.Hash) ([]plumbing.Hash, error) {
	remote := make(map[plumbing.Hash]bool, len(advertised))
	for _, h := range advertised {
		remote[h] = true
	}
	w := &pushWalker{r: r, remote: remote, seen: map[plumbing.Hash]bool{}}
	for _, h := range news {
		if err := w.object(h); err != nil {
			if errors.Is(err, errWalkTooFar) {
				return revlist.Objects(r.storer, news, advertised)
			}
			return nil, err
		}
	}
	return w.out, nil
}

type pushWalker struct {
	r       *Repository
	remote  map[plumbing.Hash]bool
	seen    map[plumbing.Hash]bool
	out     []plumbing.Hash
	commits int
}

func (w *pushWalker) add(h plumbing.Hash) bool {
	if w.seen[h] || w.remote[h] {
		return false
	}
	w.seen[h] = true
	w.out = append(w.out, h)
	return true
}

func (w *pushWalker) object(h plumbing.Hash) error {
	if w.seen[h] || w.remote[h] {
		return nil
	}
	obj, err := w.r.storer.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return err
	}
	switch obj.Type() {
	case plumbing.TagObject:
		t, err := object.DecodeTag(w.r.storer, obj)
		if err != nil {
			return err
		}
		w.add(h)
		return w.object(t.Target)
	case plumbing.CommitObject:
		c, err := object.DecodeCommit(w.r.storer, obj)
		if err != nil {
			return err
		}
		if w.commits++; w.commits > maxNewCommits {
			return errWalkTooFar
		}
		w.add(h)
		var bases []plumbing.Hash
		for _, p := range c.ParentHashes {
			if !w.remote[p] && !w.seen[p] {
				if err := w.object(p); err != nil {
					return err
				}
			}
			pc, err := object.GetCommit(w.r.storer, p)
			if err != nil {
				return err
			}
			bases = append(bases, pc.TreeHash)
		}
		return w.tree(c.TreeHash, bases)
	default:
		return errWalkTooFar
	}
}

// tree adds a tree and the entries that differ from every base tree.
func (w *pushWalker) tree(h plumbing.Hash, bases []plumbing.Hash) error {
	for _, b := range bases {
		if b == h {
			return nil
		}
	}
	if !w.add(h) {
		return nil
	}
	t, err := object.GetTree(w.r.storer, h)
	if err != nil {
		return err
	}
	baseTrees := make([]*object.Tree, 0, len(bases))
	for _, b := range bases {
		if b.IsZero() {
			continue
		}
		bt, err := object.GetTree(w.r.storer, b)
		if err != nil {
			return err
		}
		baseTrees = append(baseTrees, bt)
	}
	for _, e := range t.Entries {
		var subBases []plumbing.Hash
		same := false
		for _, bt := range baseTrees {
			if be, err := bt.FindEntry(e.Name); err == nil && be.Mode == e.Mode {
				if be.Hash == e.Hash {
					same = true
					break
				}
				subBases = append(subBases, be.Hash)
			}
		}
		switch {
		case same, e.Mode == filemode.Submodule:
		case e.Mode == filemode.Dir:
			if err := w.tree(e.Hash, subBases); err != nil {
				return err
			}
		default:
			w.add(e.Hash)
		}
	}
	return nil
}
