"""Running a Harbor task: its images, one trial (agent, stop, fresh verifier) and ``packs validate --run`` on a
Harbor pack (``README.md``; docs/threat-model.md, "Harbor tasks")."""
