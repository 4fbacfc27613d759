"""The AWS wing: everything a workshop run creates in an account, and how it is removed.

`clients` (boto3 sessions and clients, region, policy files), `errors` (the wing's exceptions, AWS errors in one
line), `waits` (role propagation, status polls), `dlc` (the llama.cpp DLC's registry and images), `runrecord` (the
wing's door to the run registry, `semif_lib.registry`, which records the region), `permissions` (the IAM actions each
step needs), `preflight` (whether the caller has them, before anything is created), `quotas` (the account quotas a run
holds at its peak), `packaging` (model.tar.gz to S3), `iamroles`, `deployment` (endpoints created and awaited; each
request printed as it is sent, built by `apicalls`), `invocations` (a deployed endpoint called), `asyncinference` (the
decision image behind SageMaker's queue, answers in S3, scale to zero), `imagebuild` (CodeBuild to ECR), `images`
(images by digest: what ECR holds, which image an endpoint runs), `scaling` (Batch Transform, autoscaling) and
`teardown` (a deleter per recorded AWS resource kind; the processes and containers on this machine are stopped by the
targets that started them, `semif_lib.targets`).

Its doors, exactly (tests/test_architecture.py holds this list to the code): `containers`, `contract`, `errors`,
`invocation`, `jsonlines`, `llama_flags`, `llamabuilds`, `model`, `paths`, `registry`, `settings`.
Doors: this wing never imports the decision wing or llama_cpp (a notebook in Studio can run it
without a model), and boto3 loads only inside the functions that call AWS. It reads the DLC's
`SM_LLAMA_CPP_*` rules from the plumbing (`llama_flags`).
"""
