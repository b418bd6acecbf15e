//! The MCP server's wire: tool names and input schemas, snapshot-tested.

use nucleic_mcp::NucleicMcp;

#[test]
fn tool_names_and_schemas() {
    let mut tools = serde_json::to_value(NucleicMcp::tools()).expect("tools serialize");
    if let Some(list) = tools.as_array_mut() {
        list.sort_by_key(|t| t["name"].as_str().unwrap_or_default().to_owned());
    }
    insta::assert_json_snapshot!(tools);
}
