# trainctl's Debian packages, built by CPack (docs/operators/install.md):
#
#   cmake --build build --target package
#
# writes three packages into build/, one per install component:
#   trainctld       (component daemon) /usr/bin/trainctld, its unit, /etc/trainctl/trainctld.yaml;
#                   its postinst makes the trainctl system user that trainctld runs as
#   trainctl-agent  (component agent)  /usr/bin/trainctl-agent and trainctl-shim, its unit,
#                   /etc/trainctl/agent.yaml
#   trainctl        (component cli)    /usr/bin/trainctl and its bash and zsh completion
# Each package depends on what dpkg-shlibdeps finds its programs link, plus what its maintainer
# scripts (deploy/debian/<package>/) call; trainctl-agent recommends the container tools.
# The configs are conffiles. Included from the top CMakeLists.txt; installs nothing by itself
# outside a package build (`cmake --install` with a DESTDIR stages the same tree).

set(TRAINCTL_PACKAGE_MAINTAINER "trainctl developers <trainctl@example.org>"
    CACHE STRING "The Maintainer field of the Debian packages")
set(TRAINCTL_DEB_DIR ${PROJECT_SOURCE_DIR}/deploy/debian)
set(TRAINCTL_PACKAGE_FILES ${CMAKE_BINARY_DIR}/packaging)

# ---- what each package installs ----

install(TARGETS trainctld RUNTIME DESTINATION bin COMPONENT daemon)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/trainctld.service DESTINATION /lib/systemd/system
        COMPONENT daemon)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/trainctld.yaml DESTINATION /etc/trainctl
        COMPONENT daemon)

# The agent finds trainctl-shim next to itself.
install(TARGETS trainctl-agent trainctl-shim RUNTIME DESTINATION bin COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/trainctl-agent.service
        DESTINATION /lib/systemd/system COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/agent.yaml DESTINATION /etc/trainctl COMPONENT agent)
# trainctl-shim is static on purpose (agents/CMakeLists.txt): lintian is told so.
install(FILES ${TRAINCTL_DEB_DIR}/trainctl-agent/lintian-overrides
        DESTINATION share/lintian/overrides RENAME trainctl-agent COMPONENT agent)

install(TARGETS trainctl RUNTIME DESTINATION bin COMPONENT cli)

# The completion scripts, from the CLI just built, and each package's gzipped changelog and
# README (Debian keeps /usr/share/doc compressed).
string(TIMESTAMP TRAINCTL_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(CPACK_PACKAGE_CONTACT "${TRAINCTL_PACKAGE_MAINTAINER}")
set(TRAINCTL_DEB_SOURCE trainctl)
configure_file(${TRAINCTL_DEB_DIR}/changelog.in ${TRAINCTL_PACKAGE_FILES}/changelog @ONLY)
add_custom_command(
  OUTPUT ${TRAINCTL_PACKAGE_FILES}/completion/trainctl ${TRAINCTL_PACKAGE_FILES}/completion/_trainctl
  COMMAND ${CMAKE_COMMAND} -E make_directory ${TRAINCTL_PACKAGE_FILES}/completion
  COMMAND sh -c "$<TARGET_FILE:trainctl> completion bash >completion/trainctl"
  COMMAND sh -c "$<TARGET_FILE:trainctl> completion zsh >completion/_trainctl"
  WORKING_DIRECTORY ${TRAINCTL_PACKAGE_FILES}
  DEPENDS trainctl
  COMMENT "Generating trainctl's bash and zsh completion")
add_custom_command(
  OUTPUT ${TRAINCTL_PACKAGE_FILES}/changelog.gz ${TRAINCTL_PACKAGE_FILES}/README.md.gz
  COMMAND sh -c "gzip -9nc changelog >changelog.gz"
  COMMAND sh -c "gzip -9nc '${PROJECT_SOURCE_DIR}/README.md' >README.md.gz"
  WORKING_DIRECTORY ${TRAINCTL_PACKAGE_FILES}
  DEPENDS ${TRAINCTL_PACKAGE_FILES}/changelog ${PROJECT_SOURCE_DIR}/README.md
  COMMENT "Compressing the packages' changelog and README")
add_custom_target(trainctl_package_files ALL
  DEPENDS ${TRAINCTL_PACKAGE_FILES}/completion/trainctl
          ${TRAINCTL_PACKAGE_FILES}/completion/_trainctl
          ${TRAINCTL_PACKAGE_FILES}/changelog.gz ${TRAINCTL_PACKAGE_FILES}/README.md.gz)

install(FILES ${TRAINCTL_PACKAGE_FILES}/completion/trainctl
        DESTINATION share/bash-completion/completions COMPONENT cli)
install(FILES ${TRAINCTL_PACKAGE_FILES}/completion/_trainctl
        DESTINATION share/zsh/vendor-completions COMPONENT cli)

foreach(package_component trainctld:daemon trainctl-agent:agent trainctl:cli)
  string(REPLACE ":" ";" pair ${package_component})
  list(GET pair 0 package)
  list(GET pair 1 component)
  install(FILES ${TRAINCTL_DEB_DIR}/copyright ${TRAINCTL_PACKAGE_FILES}/changelog.gz
                ${TRAINCTL_PACKAGE_FILES}/README.md.gz
          DESTINATION share/doc/${package} COMPONENT ${component})
endforeach()

# ---- CPack ----

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME trainctl)
set(CPACK_PACKAGE_VENDOR "the trainctl authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_COMPONENTS_ALL daemon agent cli)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME trainctld)
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
    ${TRAINCTL_DEB_DIR}/trainctld/conffiles ${TRAINCTL_DEB_DIR}/trainctld/postinst
    ${TRAINCTL_DEB_DIR}/trainctld/prerm ${TRAINCTL_DEB_DIR}/trainctld/postrm)
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
    "trainctl scheduler for ML training jobs on GPU/TPU hosts
trainctld keeps every job in SQLite and places all replicas of a job at
once on the nodes that run trainctl-agent. It serves gRPC for the trainctl
CLI and the agents, and a REST API and web console.
.
The package installs trainctld, its systemd unit (not enabled) and its
config /etc/trainctl/trainctld.yaml, and makes the trainctl system user
that trainctld runs as.")

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME trainctl-agent)
# Replicas that name a container image: the agent pulls it with skopeo, unpacks it with umoci
# (agents/image_cache.h) and runs it with runc. gdb (and python3.11-dbg for Python frames) print
# replicas' stacks before they are stopped (agents/stack_capture.h). Recommended: hosts that run
# only host processes need no image tools, and a host without gdb captures no stacks.
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "skopeo, umoci, runc, gdb, python3.11-dbg")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    ${TRAINCTL_DEB_DIR}/trainctl-agent/conffiles ${TRAINCTL_DEB_DIR}/trainctl-agent/postinst
    ${TRAINCTL_DEB_DIR}/trainctl-agent/prerm ${TRAINCTL_DEB_DIR}/trainctl-agent/postrm)
set(CPACK_COMPONENT_AGENT_DESCRIPTION
    "trainctl node agent, for each GPU/TPU host of a trainctl cluster
trainctl-agent registers its host with trainctld, launches the replicas of
the jobs placed on it (each under a trainctl-shim of its own, so that they
outlive the agent), captures their logs and reports how they exited.
.
The package installs trainctl-agent and trainctl-shim, the agent's systemd
unit (not enabled) and its config /etc/trainctl/agent.yaml.")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME trainctl)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "command line of the trainctl scheduler for ML training jobs
trainctl submits jobs to trainctld, waits for them, shows their logs,
events and state, and manages nodes, quotas and tokens.
.
The package installs trainctl and its bash and zsh completion.")

include(CPack)
