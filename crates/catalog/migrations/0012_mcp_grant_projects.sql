-- MCP grants limited to some projects (issue 30): their project ids, comma-separated; NULL: every
-- project.
ALTER TABLE mcp_grants ADD COLUMN projects TEXT;
