-- The agent's confinement (issue 24): what a project's agents see beyond the defaults, as JSON
-- (`ProjectSandbox`: readOnly / writable / hide paths and allowDomains).
ALTER TABLE projects ADD COLUMN sandbox TEXT NOT NULL DEFAULT '{}';
