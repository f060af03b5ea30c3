"""What payorch ships for coding agents: an Agent Skill (`SKILL.md`) and an `llms.txt`."""
