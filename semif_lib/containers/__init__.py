"""Images built and run on this machine as SageMaker runs them, and llama-server without a container (plumbing).

* `runtime`: the docker or podman CLI, and a container run as SageMaker runs one (`run_container`);
* `images`: the DLC replica and the adapter image built from the repository's Dockerfiles;
* `textserver`: the text path's peer, the text DLC in a container or llama-server natively (`run_text_server`);
* `dockerfile`: the one Dockerfile parser, without Docker (notebook 03's build-context check, the container tests).

Each is imported by name; this package imports nothing.
"""
