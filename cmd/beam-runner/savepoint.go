package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/beam-runner/beam-runner/runner/jobs"
	"google.golang.org/protobuf/types/known/structpb"
)

// stopFlags are cancel's and drain's: --wait, and a savepoint first.
func stopFlags(fs *flag.FlagSet) {
	waitFlag(fs)
	fs.Bool("savepoint", false, "write a savepoint of the job first (cancel: the job stops at it)")
	fs.String("savepoint_dir", "", "the savepoint's directory on the server's machine (implies --savepoint; default: a new one under its --state_dir)")
}

// wantsSavepoint: cancel or drain asked for a savepoint first.
func (c *opCtx) wantsSavepoint() bool {
	return flagBool(c.fs, "savepoint") || isSet(c.fs, "savepoint_dir")
}

// savepointJob writes a savepoint of a running job; the job goes on.
func savepointJob(ctx context.Context, c *opCtx) error {
	dir := ""
	if len(c.args) > 1 {
		dir = c.args[1]
	}
	return c.savepoint(ctx, dir, jobs.KeepRunning)
}

// savepointThen is cancel's or drain's --savepoint.
func (c *opCtx) savepointThen(ctx context.Context, then jobs.Then) error {
	return c.savepoint(ctx, c.fs.Lookup("savepoint_dir").Value.String(), then)
}

// savepoint asks the server for a savepoint of the job into dir (made
// absolute here: the server resolves no relative path), then the job
// goes on, is cancelled or drains, as then says.
func (c *opCtx) savepoint(ctx context.Context, dir string, then jobs.Then) error {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		dir = abs
	}
	req, err := structpb.NewStruct(map[string]any{"job_id": c.args[0], "dir": dir, "then": string(then)})
	if err != nil {
		return err
	}
	resp := &structpb.Struct{}
	if err := c.conn.Invoke(ctx, jobs.SavepointMethod, req, resp); err != nil {
		return err
	}
	f := resp.GetFields()
	out := savepointJSON{ID: c.args[0], Dir: f["dir"].GetStringValue(),
		Sequence: uint64(f["sequence"].GetNumberValue()), State: f["state"].GetStringValue()}
	if then != jobs.KeepRunning && flagBool(c.fs, "wait") {
		st, err := c.awaitEnd(ctx, out.ID)
		if err != nil {
			return err
		}
		out.State = st.String()
	}
	if c.json {
		return c.printJSON(out)
	}
	_, err = fmt.Fprintf(c.out, "job %s: savepoint %d written to %s; job %s\n", out.ID, out.Sequence, out.Dir, out.State)
	return err
}

type savepointJSON struct {
	ID       string `json:"id"`
	Dir      string `json:"dir"`
	Sequence uint64 `json:"sequence"`
	State    string `json:"state"`
}
