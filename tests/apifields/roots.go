package main

import batchv1 "k8s.io/api/batch/v1"

// roots are the objects whose fields strict decoding checks.
func roots() []any { return []any{batchv1.Job{}, batchv1.CronJob{}} }
