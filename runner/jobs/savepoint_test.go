package jobs

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestSavepointDir(t *testing.T) {
	bare := &Service{}
	if _, err := bare.savepointDir("j1", ""); err == nil || !strings.Contains(err.Error(), "keeps no --state_dir: name the savepoint's directory") {
		t.Errorf("no dir and no state dir: %v", err)
	}
	if _, err := bare.savepointDir("j1", "rel/sp"); err == nil || !strings.Contains(err.Error(), `savepoint directory "rel/sp": give an absolute path`) {
		t.Errorf("a relative dir: %v", err)
	}
	if got, err := bare.savepointDir("j1", "/a/b/../sp"); err != nil || got != "/a/sp" {
		t.Errorf("an absolute dir: %q, %v", got, err)
	}
	dir := t.TempDir()
	st := openStore(t, dir)
	defer st.Close()
	durable := &Service{opts: Options{Store: st}}
	got, err := durable.savepointDir("j1", "")
	if err != nil || filepath.Dir(got) != filepath.Join(st.Dir(), "savepoints") || !strings.HasPrefix(filepath.Base(got), "j1-") {
		t.Errorf("the default dir: %q, %v; want a new one under %s", got, err, filepath.Join(st.Dir(), "savepoints"))
	}
}

func TestFromSavepointOptionRefusals(t *testing.T) {
	s := &Service{}
	opts := func(v *structpb.Value) *structpb.Struct {
		return &structpb.Struct{Fields: map[string]*structpb.Value{"beam:option:from_savepoint:v1": v}}
	}
	if ckpt, err := s.fromSavepoint(nil, &structpb.Struct{}, nil); ckpt != nil || err != nil {
		t.Errorf("no option: %v, %v", ckpt, err)
	}
	if _, err := s.fromSavepoint(nil, opts(structpb.NewNumberValue(3)), nil); err == nil || !strings.Contains(err.Error(), "option from_savepoint: want a savepoint directory, got 3") {
		t.Errorf("a number: %v", err)
	}
	// An executor without savepoints cannot start from one.
	if _, err := s.fromSavepoint(nil, opts(structpb.NewStringValue(t.TempDir())), nil); err == nil || !strings.Contains(err.Error(), "cannot start jobs from savepoints") {
		t.Errorf("no Savepointer: %v", err)
	}
}
