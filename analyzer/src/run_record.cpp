#include "run_record.h"

#include <algorithm>
#include <cctype>

namespace prof::analysis {
namespace {

std::string trimmed(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t from = 0;
  while (from < s.size() && space(static_cast<unsigned char>(s[from]))) ++from;
  return s.substr(from);
}

const std::string* meta_of(const trace::RankTrace& t, const char* key) {
  const auto it = t.meta().find(key);
  return it == t.meta().end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

std::pair<std::string, std::string> library_and_version(const std::string& mpi_library) {
  const std::string line = trimmed(mpi_library.substr(0, mpi_library.find('\n')));
  // The first word starting with a digit, or with "v" and a digit.
  size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
    size_t end = at;
    while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
    std::string word = line.substr(at, end - at);
    if (word.size() > 1 && (word[0] == 'v' || word[0] == 'V') && std::isdigit(static_cast<unsigned char>(word[1])))
      word.erase(0, 1);
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0]))) {
      while (!word.empty() && (word.back() == ',' || word.back() == ';' || word.back() == ')')) word.pop_back();
      std::string name = trimmed(line.substr(0, at));
      // "MPICH Version:" -> "MPICH"
      for (const char* label : {"Version:", "version:", "Version", "version"})
        if (name.size() > std::string(label).size() &&
            name.compare(name.size() - std::string(label).size(), std::string::npos, label) == 0) {
          name = trimmed(name.substr(0, name.size() - std::string(label).size()));
          break;
        }
      return {name, word};
    }
    at = end;
  }
  return {line, ""};
}

int RunRecord::ranks_per_node() const {
  size_t most = 0;
  for (const Host& h : hosts) most = std::max(most, h.ranks.size());
  return static_cast<int>(most);
}

RunRecord run_record(const std::vector<const trace::RankTrace*>& traces) {
  RunRecord run;
  for (const trace::RankTrace* t : traces) {
    if (run.mpi_library.empty())
      if (const std::string* v = meta_of(*t, "mpi_library")) {
        run.mpi_library = format::unescaped_text(*v);
        std::tie(run.library, run.library_version) = library_and_version(run.mpi_library);
      }
    if (run.transport.empty())
      if (const std::string* v = meta_of(*t, "transport")) {
        run.transport = *v;
        if (const std::string* version = meta_of(*t, "transport_version")) run.transport_version = *version;
      }
    if (run.environment.empty()) run.environment = t->environment();
    if (run.prof_settings.empty()) run.prof_settings = t->settings();
    if (run.command.empty())
      if (const std::string* v = meta_of(*t, "command")) run.command = *v;
    if (const std::string* host = meta_of(*t, "host")) {
      auto it = std::find_if(run.hosts.begin(), run.hosts.end(),
                             [&](const RunRecord::Host& h) { return h.name == *host; });
      if (it == run.hosts.end()) it = run.hosts.insert(run.hosts.end(), RunRecord::Host{*host, {}});
      it->ranks.push_back(t->rank());
    }
  }
  for (RunRecord::Host& h : run.hosts) std::sort(h.ranks.begin(), h.ranks.end());
  return run;
}

}  // namespace prof::analysis
